package jsengine

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// Transformed is [WrapProgram]'s output for a program's source, computed ahead by the isolated
// runtime's parent process (see [WrapCache]) and handed to the engine in the worker, which then
// skips the transform. Only packages of the code runtime can make one.
type Transformed struct {
	// JS is WrapProgram(source) for the program's Source; "" means not transformed.
	JS string
}

// WrapCache is a bounded LRU of WrapProgram's outputs keyed by the SHA-256 of the source: the
// isolated runtime's parent transforms each program once and sends the result to its workers,
// which each run one program and so would always miss their own compile caches. Safe for
// concurrent use; the lock is never held while transforming.
type WrapCache struct {
	mu    sync.Mutex
	lru   list.List // of *wrapEntry, most recently used first
	index map[[sha256.Size]byte]*list.Element
	bytes int
}

type wrapEntry struct {
	key [sha256.Size]byte
	js  string
}

// wrapCacheMaxBytes bounds the transformed texts a WrapCache holds (with their inline source
// maps they are a few times the sources).
const wrapCacheMaxBytes = 4 * CacheMaxBytes

// Wrap returns WrapProgram(src), from the cache when it is there, and true; or false when src is
// longer than CacheMaxSource, fails the bounds scan or the transform (the engine then transforms
// it and reports the failure itself, as it would have without the cache). The bounds scan runs
// before the transform, as in the engines, so that the transform's work stays bounded.
func (c *WrapCache) Wrap(src string) (js string, ok bool) {
	if len(src) > CacheMaxSource {
		return "", false
	}
	key := sha256.Sum256([]byte(src))
	c.mu.Lock()
	if e, hit := c.index[key]; hit {
		c.lru.MoveToFront(e)
		js = e.Value.(*wrapEntry).js
		c.mu.Unlock()
		return js, true
	}
	c.mu.Unlock()
	if _, f := CheckProgramBounds(src); f != nil {
		return "", false
	}
	js, ok = wrapRecovered(src)
	if !ok {
		return "", false
	}
	c.put(key, js)
	return js, true
}

// Put caches js as the transform of src (for tests: Wrap fills the cache).
func (c *WrapCache) Put(src, js string) { c.put(sha256.Sum256([]byte(src)), js) }

func (c *WrapCache) put(key [sha256.Size]byte, js string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, hit := c.index[key]; hit {
		return // a concurrent run transformed it too
	}
	if c.index == nil {
		c.index = make(map[[sha256.Size]byte]*list.Element)
	}
	c.index[key] = c.lru.PushFront(&wrapEntry{key: key, js: js})
	c.bytes += len(js)
	for c.lru.Len() > CacheMaxEntries || c.bytes > wrapCacheMaxBytes {
		old := c.lru.Remove(c.lru.Back()).(*wrapEntry)
		delete(c.index, old.key)
		c.bytes -= len(old.js)
	}
}

// wrapRecovered is WrapProgram, with a panic (a transformer bug) reported as a failure instead of
// crashing the caller: the engine in the worker then meets it, where it is contained.
func wrapRecovered(src string) (js string, ok bool) {
	defer func() {
		if recover() != nil {
			js, ok = "", false
		}
	}()
	js, f := WrapProgram(src)
	return js, f == nil
}

// Len returns the number of cached transforms.
func (c *WrapCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
