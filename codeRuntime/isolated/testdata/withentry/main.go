// Command withentry calls the worker entry first thing in main: started as a worker it serves one
// run and exits; otherwise its main goes on (see TestWorkerEntryServes).
package main

import (
	"fmt"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
)

func main() {
	isolated.ServeIfWorker()
	fmt.Println("main ran")
}
