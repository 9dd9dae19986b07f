package crdupgradesafety

import (
	"container/list"
	"slices"
	"strconv"
	"strings"
	"sync"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Validators keeps the validators ObjectReader.Read builds for a batch of
// objects (newVersionValidator, pruned to what the batch reaches) for the
// batches and runs that follow, least recently used out beyond its bound.
// A batch's validators depend on the CRD, the version, and which keys its
// objects have where (shapeOf): reviews of the same new CRD (a burst's
// rounds, the pages of one LIST, identical reviews) build them once. The
// key holds the CRD by identity: only for CRDs that nobody modifies (the
// webhook's, decoded once per content and shared). Safe for concurrent
// use; a nil *Validators builds every time.
type Validators struct {
	max int

	mu      sync.Mutex
	entries map[validatorsKey]*list.Element
	lru     list.List // of *validatorsEntry, most recently used first
	hits    int
}

type validatorsKey struct {
	crd            *apiextv1.CustomResourceDefinition
	version, shape string
}

type validatorsEntry struct {
	key validatorsKey
	v   *versionValidator
}

// NewValidators returns a cache of the validators of at most max batch
// shapes.
func NewValidators(max int) *Validators {
	return &Validators{max: max, entries: map[validatorsKey]*list.Element{}}
}

// UseValidators makes r take the validators of its batches from c.
func (r *ObjectReader) UseValidators(c *Validators) {
	r.validators = c
}

// get returns newVersionValidator(crd, version, objs, true), from the cache
// when a batch of the same shape was validated under the same CRD and
// version.
func (c *Validators) get(crd *apiextv1.CustomResourceDefinition, version string, objs []any) (*versionValidator, error) {
	if c == nil {
		return newVersionValidator(crd, version, objs, true)
	}
	key := validatorsKey{crd: crd, version: version, shape: shapeOf(objs)}
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.lru.MoveToFront(e)
		c.hits++
		c.mu.Unlock()
		return e.Value.(*validatorsEntry).v, nil
	}
	c.mu.Unlock()
	v, err := newVersionValidator(crd, version, objs, true)
	if err != nil || v == nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*validatorsEntry).v, nil
	}
	c.entries[key] = c.lru.PushFront(&validatorsEntry{key: key, v: v})
	for c.lru.Len() > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*validatorsEntry).key)
	}
	return v, nil
}

// shapeOf describes, for a batch of values, which keys the objects have at
// each place and where there are objects, lists and other values, merged
// over the batch: everything the pruning of the validators reads
// (pruneAbsentProperties, dropUnreachedRules, reachedSchema look at the
// keys of objects and the elements of lists, never at other values). Two
// batches of the same shape get the same validators.
func shapeOf(vals []any) string {
	s := &shape{}
	for _, v := range vals {
		s.add(v)
	}
	var b strings.Builder
	s.write(&b)
	return b.String()
}

type shape struct {
	kinds byte // 1 object, 2 list, 4 anything else
	keys  map[string]*shape
	items *shape
}

func (s *shape) add(v any) {
	switch v := v.(type) {
	case map[string]any:
		s.kinds |= 1
		if s.keys == nil {
			s.keys = map[string]*shape{}
		}
		for k, x := range v {
			c := s.keys[k]
			if c == nil {
				c = &shape{}
				s.keys[k] = c
			}
			c.add(x)
		}
	case []any:
		s.kinds |= 2
		if s.items == nil {
			s.items = &shape{}
		}
		for _, x := range v {
			s.items.add(x)
		}
	default:
		s.kinds |= 4
	}
}

func (s *shape) write(b *strings.Builder) {
	b.WriteByte('0' + s.kinds)
	if s.keys != nil {
		keys := make([]string, 0, len(s.keys))
		for k := range s.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for _, k := range keys {
			// Length-prefixed: no key can pass for another's end.
			b.WriteString(strconv.Itoa(len(k)))
			b.WriteByte(':')
			b.WriteString(k)
			s.keys[k].write(b)
		}
		b.WriteByte('}')
	}
	if s.items != nil {
		b.WriteByte('[')
		s.items.write(b)
		b.WriteByte(']')
	}
}
