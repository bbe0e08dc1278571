package quickjs

import (
	"container/list"
	"sync"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// qjsCache is a bounded LRU of transformed programs keyed by the model's source, with the bounds
// of the goja backend's programCache. A qjsProgram is immutable (its source map decodes once,
// safely), so runs share entries; each run still evaluates it in a fresh VM.
type qjsCache struct {
	mu    sync.Mutex
	lru   list.List // of *qjsCached, most recently used first
	index map[string]*list.Element
	bytes int
}

type qjsCached struct {
	src string
	prg *qjsProgram
}

// compile returns the transformed src, from the cache when it is there.
func (c *qjsCache) compile(src string) (*qjsProgram, *coderuntime.Failure) {
	if len(src) > jsengine.CacheMaxSource {
		return qjsTransform(src)
	}
	c.mu.Lock()
	if e, ok := c.index[src]; ok {
		c.lru.MoveToFront(e)
		prg := e.Value.(*qjsCached).prg
		c.mu.Unlock()
		return prg, nil
	}
	c.mu.Unlock()
	prg, f := qjsTransform(src)
	if f != nil {
		return nil, f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.index[src]; ok {
		return prg, nil
	}
	if c.index == nil {
		c.index = make(map[string]*list.Element)
	}
	c.index[src] = c.lru.PushFront(&qjsCached{src: src, prg: prg})
	c.bytes += len(src)
	for c.lru.Len() > jsengine.CacheMaxEntries || c.bytes > jsengine.CacheMaxBytes {
		old := c.lru.Remove(c.lru.Back()).(*qjsCached)
		delete(c.index, old.src)
		c.bytes -= len(old.src)
	}
	return prg, nil
}

// qjsTransform strips the TypeScript of src (wrapProgram, as for goja) and separates the source map.
func qjsTransform(src string) (*qjsProgram, *coderuntime.Failure) {
	js, f := jsengine.WrapProgram(src)
	if f != nil {
		return nil, f
	}
	code, sm := splitSourceMap(js)
	return &qjsProgram{js: code, sm: sm}, nil
}
