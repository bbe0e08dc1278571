// Command noentry links package isolated but does not call its worker entry: whatever its
// environment says, its main runs (see TestWorkerEntryIsExplicit).
package main

import (
	"fmt"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
)

func main() {
	_ = isolated.Plugin
	fmt.Println("main ran")
}
