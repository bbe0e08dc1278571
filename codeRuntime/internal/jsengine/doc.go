// Package jsengine is the JavaScript plumbing the code-runtime engines share (codeRuntime/goja,
// codeRuntime/quickjs, codeRuntime/isolated): the bounds every program text must fit before a
// parser sees it, the TypeScript transform (esbuild) and its source maps, the binding-call pool,
// and the one mapping from a binding's error to what the program sees ([BindingError]).
package jsengine
