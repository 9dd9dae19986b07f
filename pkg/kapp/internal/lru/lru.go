// Package lru is the least-recently-used cache the webhook's caches share
// (decoded CRDs, comparisons, validators): bounded by entries and by an
// estimate of the bytes its values hold, so that the memory of a cache does
// not depend on what its entries happen to be (one comparison of a large
// CRD held 13 MB).
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values, least recently used out first once it holds
// more than MaxEntries entries or more than MaxBytes bytes (the sum of the
// sizes given to Add). A value larger than MaxBytes is never kept. Safe
// for concurrent use.
type Cache[K comparable, V any] struct {
	maxEntries int
	maxBytes   int64

	mu      sync.Mutex
	entries map[K]*list.Element
	order   list.List // of *entry[K, V], most recently used first
	bytes   int64
	hits    int
	evicted int
}

type entry[K comparable, V any] struct {
	key   K
	value V
	size  int64
}

// New returns a cache of at most maxEntries entries (0: none kept) and
// maxBytes bytes.
func New[K comparable, V any](maxEntries int, maxBytes int64) *Cache[K, V] {
	return &Cache[K, V]{maxEntries: maxEntries, maxBytes: maxBytes, entries: map[K]*list.Element{}}
}

// Get returns the value of key, if the cache holds it, and makes it the
// most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		c.hits++
		return e.Value.(*entry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Add keeps value under key, of size bytes, and evicts the least recently
// used entries beyond the bounds. When the cache holds key already (added
// meanwhile by another caller), it keeps that value and returns it with
// true; otherwise it returns value and false.
func (c *Cache[K, V]) Add(key K, value V, size int64) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry[K, V]).value, true
	}
	if size > c.maxBytes || c.maxEntries <= 0 {
		return value, false
	}
	c.entries[key] = c.order.PushFront(&entry[K, V]{key: key, value: value, size: size})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		last := c.order.Back()
		e := last.Value.(*entry[K, V])
		c.order.Remove(last)
		delete(c.entries, e.key)
		c.bytes -= e.size
		c.evicted++
	}
	return value, false
}

// Stats are a cache's counters.
type Stats struct {
	Entries int
	Bytes   int64
	Hits    int
	Evicted int
}

// Stats returns the cache's counters now.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: c.order.Len(), Bytes: c.bytes, Hits: c.hits, Evicted: c.evicted}
}
