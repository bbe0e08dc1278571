// Package spill is a policy plugin that keeps large tool content out of
// the model's context and the session log, without losing it: content
// over Config.MaxInlineBytes is written whole to a spill [Store] (a
// directory by default, [DirStore]) and replaced by a preview and a
// locator that [Store.Get] (a UI, a replay) resolves to the whole
// content.
//
// It listens to two seams:
//
//   - codemode.CodeDispatchLog (tools/code-dispatch-log): the durable copy
//     of each settled Code Mode sub-call. A text block over the limit
//     becomes its preview and locator; so does a value over the limit,
//     replaced by {"$spill": locator, "bytes": n}. The program already
//     received the whole value: only the logged copy changes. The write is
//     synchronous, on the sub-call's goroutine, before the sub-call
//     settles: a slow store holds up the program's next call
//     (back-pressure) instead of accumulating pending writes.
//   - tools/post-execute, for native (not Code Mode) successful results: a
//     text block of the final content over the limit becomes its preview
//     and locator in what the model sees; the value of a declared output
//     is kept.
//
// A store failure keeps the content inline (it is logged): spilling never
// loses content or fails a call.
package spill
