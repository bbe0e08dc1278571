// Package toolbash (directory plugins/tool-bash) is the reference shell
// tool plugin: `bash` runs a command under the call's context in its own
// process group, kills the whole group when the call is cancelled or its
// time budget runs out, caps the captured output, and renders the terminal
// card (the command as title, the description above it; the output and
// exit status on completion, read back from the result's meta so a replay
// renders the same card).
package toolbash
