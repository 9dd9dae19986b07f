package lru

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCache: the least recently used entries go first, by entries and by
// bytes; a value over the byte bound is not kept; a key added twice keeps
// its first value.
func TestCache(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxEntries int
		maxBytes   int64
		adds       []int64 // sizes of keys 0, 1, 2, ... added in order
		get        []int   // keys read after the adds, in order
		then       int64   // the size of one more key added after the reads
		want       []int   // keys held at the end
		bytes      int64
	}{
		{name: "within both bounds", maxEntries: 4, maxBytes: 100, adds: []int64{10, 20, 30}, then: 5, want: []int{0, 1, 2, 3}, bytes: 65},
		{name: "over the entries: the oldest out", maxEntries: 2, maxBytes: 100, adds: []int64{10, 20}, then: 5, want: []int{1, 2}, bytes: 25},
		{name: "over the bytes: the oldest out", maxEntries: 10, maxBytes: 50, adds: []int64{10, 20, 15}, then: 10, want: []int{1, 2, 3}, bytes: 45},
		{name: "over the bytes: as many out as it takes", maxEntries: 10, maxBytes: 50, adds: []int64{10, 20, 15}, then: 40, want: []int{3}, bytes: 40},
		{name: "a read keeps an entry", maxEntries: 10, maxBytes: 50, adds: []int64{10, 20, 15}, get: []int{0}, then: 10,
			want: []int{0, 2, 3}, bytes: 35},
		{name: "a value over the bound is not kept", maxEntries: 10, maxBytes: 50, adds: []int64{10, 20}, then: 51, want: []int{0, 1}, bytes: 30},
		{name: "no entries: nothing kept", maxEntries: 0, maxBytes: 50, adds: []int64{10}, then: 1, want: nil, bytes: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New[int, string](tc.maxEntries, tc.maxBytes)
			for k, size := range tc.adds {
				c.Add(k, "v", size)
			}
			for _, k := range tc.get {
				_, ok := c.Get(k)
				require.True(t, ok, "key %d", k)
			}
			c.Add(len(tc.adds), "v", tc.then)
			var held []int
			for k := range len(tc.adds) + 1 {
				if _, ok := c.Get(k); ok {
					held = append(held, k)
				}
			}
			require.Equal(t, tc.want, held)
			st := c.Stats()
			require.Equal(t, tc.bytes, st.Bytes)
			require.Equal(t, len(tc.want), st.Entries)
			require.LessOrEqual(t, st.Bytes, tc.maxBytes)
		})
	}
}

func TestCacheAddKeepsTheFirstValue(t *testing.T) {
	c := New[string, int](2, 10)
	got, existed := c.Add("a", 1, 1)
	require.Equal(t, 1, got)
	require.False(t, existed)
	got, existed = c.Add("a", 2, 1)
	require.Equal(t, 1, got)
	require.True(t, existed)
	require.Equal(t, Stats{Entries: 1, Bytes: 1}, c.Stats())
}
