package goja

import (
	"container/list"
	"sync"

	"github.com/dop251/goja"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// programCache is a bounded LRU of compiled programs keyed by the model's source. It carries no state
// between runs: a *goja.Program is immutable once compiled, is not linked to any goja.Runtime, and goja
// documents it as safe for concurrent use; each run still gets a fresh goja.Runtime. Only successful
// compilations are kept. Safe for concurrent use; the lock is never held while compiling.
type programCache struct {
	mu    sync.Mutex
	lru   list.List // of *cachedProgram, most recently used first
	index map[string]*list.Element
	bytes int
}

type cachedProgram struct {
	src string
	prg *goja.Program
}

// compile returns the compiled src, from the cache when it is there (pre: see compile).
func (c *programCache) compile(src string, pre jsengine.Transformed) (*goja.Program, *coderuntime.Failure) {
	if len(src) > jsengine.CacheMaxSource {
		return compile(src, pre)
	}
	if prg := c.get(src); prg != nil {
		return prg, nil
	}
	prg, f := compile(src, pre)
	if f == nil {
		c.put(src, prg)
	}
	return prg, f
}

func (c *programCache) get(src string) *goja.Program {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[src]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cachedProgram).prg
}

func (c *programCache) put(src string, prg *goja.Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.index[src]; ok {
		return // a concurrent run compiled it too
	}
	if c.index == nil {
		c.index = make(map[string]*list.Element)
	}
	c.index[src] = c.lru.PushFront(&cachedProgram{src: src, prg: prg})
	c.bytes += len(src)
	for c.lru.Len() > jsengine.CacheMaxEntries || c.bytes > jsengine.CacheMaxBytes {
		old := c.lru.Remove(c.lru.Back()).(*cachedProgram)
		delete(c.index, old.src)
		c.bytes -= len(old.src)
	}
}

func (c *programCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
