// Package toolfs (directory plugins/tool-fs) is the reference file-tool
// plugin: read, write and edit (exact, unique string replacement), confined
// to a configured workspace root, with tool-owned presentation cards — a
// generic card with the file location for reads, and diff cards for writes
// and edits whose result carries the applied hunks with context (oldText
// absent for a new file).
//
// Confinement (see [Workspace.Resolve]) rejects ".." that climbs out of the
// root, absolute paths outside it and symlinks (anywhere on the path,
// dangling ones included) that lead outside it, with an error naming the
// path. The file operations themselves go through an [os.Root], so a
// symlink swapped in after that check cannot lead outside either. Only
// regular files are read (a FIFO or device is refused, not waited on), read
// streams the lines asked for without loading the whole file, and its text
// is valid UTF-8 (other bytes read as U+FFFD). Writes are atomic (a
// temporary file renamed over the target), so a failed write leaves the old
// content intact.
package toolfs
