// Package quickjs is the QuickJS engine of the code runtime: QuickJS, translated to Go by
// modernc.org/quickjs (no cgo), runs the program in the host process. [NewInProcess] returns it.
// In process it caps each run's memory in the VM (Config.MaxHeapBytes), interrupts inside regular
// expressions and supports ES2023 with BigInt; its remaining gaps are listed in package
// codeRuntime/isolated's conformance table, where isolation removes them. The TypeScript
// transform, the source bounds and the binding-call pool are shared with the goja engine
// (codeRuntime/internal/jsengine).
package quickjs
