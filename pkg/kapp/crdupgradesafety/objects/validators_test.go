package objects

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/celcompat"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestShapeOf: batches whose objects have the same keys at the same
// places, merged over the batch, have one shape whatever their scalar
// values; another key, a list for an object, or a key that could pass for
// the end of another are another shape.
func TestShapeOf(t *testing.T) {
	m := func(kv ...any) map[string]any {
		out := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	same := [][]any{
		{m("spec", m("a", "1", "b", 2)), m("spec", m("a", "x"))},
		{m("spec", m("a", "2")), m("spec", m("b", true, "a", nil))},
	}
	require.Equal(t, shapeOf(same[0]), shapeOf(same[1]))
	others := [][]any{
		{m("spec", m("a", "1"))},
		{m("spec", m("a", "1", "c", 2))},
		{m("spec", m("a", m(), "b", 2))},
		{m("spec", m("a", []any{}, "b", 2))},
		{m("spec", m("a", "1", "b", 2)), "scalar"},
		{m("spec", m("a:1b", "1"))},
	}
	seen := map[string]int{shapeOf(same[0]): -1}
	for i, o := range others {
		s := shapeOf(o)
		prev, dup := seen[s]
		require.False(t, dup, "batch %d has the shape of batch %d: %q", i, prev, s)
		seen[s] = i
	}
}

// TestValidatorsCache: a batch's validators come from the cache only for
// the same CRD (by identity), version and shape of batch, and the objects
// read with the cache are read as without it: every golden case's objects
// (generated from its old schema, some scrambled) read twice in batches
// with a shared cache, and once without, give equal results.
func TestValidatorsCache(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cfg := config.Default()
	c := NewValidators(64)
	cases := 0
	for _, gc := range prooftest.GoldenCases(t) {
		old := enginetest.ParseCRDStrict(t, gc.Dir+"/old.yaml", gc.Old)
		new := enginetest.ParseCRDStrict(t, gc.Dir+"/new.yaml", gc.New)
		for _, version := range VersionsToRead(old, new) {
			mo, err := prooftest.NewServedSchema(old, version)
			if err != nil {
				continue
			}
			gen := prooftest.NewObjGen(r, "")
			var objs []map[string]any
			for range 12 {
				obj := gen.Object(mo.GVK.GroupVersion().String(), mo.GVK.Kind, mo.Namespaced, mo.Structural, nil)
				if r.IntN(3) == 0 {
					scramble(gen, obj)
				}
				objs = append(objs, obj)
			}
			read := func(cache *Validators) finding.VersionImpact {
				reader, err := NewObjectReader(old, new, version, finding.SourceCluster, nil, &cfg)
				require.NoError(t, err, gc.Name)
				reader.UseValidators(cache)
				reader.Read(objs[:5])
				reader.Read(objs[5:])
				return reader.Result()
			}
			want := read(nil)
			hits := c.Stats().Hits
			first := read(c)
			second := read(c)
			require.True(t, reflect.DeepEqual(want, first), "%s %s: read with the cache differs", gc.Name, version)
			require.True(t, reflect.DeepEqual(want, second), "%s %s: read from the cache differs", gc.Name, version)
			require.Greater(t, c.Stats().Hits, hits, "%s %s: the second read builds nothing", gc.Name, version)
			cases++
		}
	}
	require.Greater(t, cases, 20)

	// Another CRD (a copy of the same content), version or shape: built anew.
	gc := prooftest.GoldenCases(t)[0]
	crd := enginetest.ParseCRDStrict(t, gc.Dir+"/new.yaml", gc.New)
	version := crd.Spec.Versions[0].Name
	batch := []any{map[string]any{"spec": map[string]any{}}}
	a, err := c.get(crd, version, batch, celcompat.Linked)
	require.NoError(t, err)
	b, _ := c.get(crd, version, []any{map[string]any{"spec": map[string]any{"other": 1}}}, celcompat.Linked)
	require.NotSame(t, a, b, "another shape")
	d, _ := c.get(crd.DeepCopy(), version, batch, celcompat.Linked)
	require.NotSame(t, a, d, "another CRD")
	e, _ := c.get(crd, version, []any{map[string]any{"spec": map[string]any{}}}, celcompat.Linked)
	require.Same(t, a, e, "the same CRD, version and shape")
	f, _ := c.get(crd, version, batch, celcompat.Before137)
	require.NotSame(t, a, f, "another CEL semantics")
}

// TestValidatorsEvictByBytes: a cache over its byte bound evicts the least
// recently used validators, whatever room its entry bound leaves.
func TestValidatorsEvictByBytes(t *testing.T) {
	gc := prooftest.GoldenCases(t)[0]
	crd := enginetest.ParseCRDStrict(t, gc.Dir+"/new.yaml", gc.New)
	version := crd.Spec.Versions[0].Name
	one := validatorMemory(crd, version)
	batch := func(key string) []any { return []any{map[string]any{"spec": map[string]any{key: 1}}} }
	c := NewValidatorsWithin(64, 2*one+64) // room for two (each entry: its estimate and its shape)
	a, err := c.get(crd, version, batch("a"), celcompat.Linked)
	require.NoError(t, err)
	_, _ = c.get(crd, version, batch("b"), celcompat.Linked)
	require.Equal(t, 2, c.Stats().Entries)
	_, _ = c.get(crd, version, batch("c"), celcompat.Linked)
	st := c.Stats()
	require.Equal(t, 2, st.Entries, "the third evicts the first")
	require.Equal(t, 1, st.Evicted)
	require.LessOrEqual(t, st.Bytes, 2*one+64)
	again, _ := c.get(crd, version, batch("a"), celcompat.Linked)
	require.NotSame(t, a, again, "the evicted one is built anew")

	unbounded := NewValidatorsWithin(64, 1<<40)
	for _, k := range []string{"a", "b", "c"} {
		_, _ = unbounded.get(crd, version, batch(k), celcompat.Linked)
	}
	require.Equal(t, 3, unbounded.Stats().Entries, "the same entries within a larger byte bound")
}

// TestValidatorSizeEstimate: the memory the validators of a version hold
// (built whole, as for a batch that reaches every field), measured on the
// heap, is within validatorMemory, for the golden cases and the real CRDs
// of hack/fetch-crds.sh (when fetched): the cache's byte bound holds.
func TestValidatorSizeEstimate(t *testing.T) {
	var files []string
	for _, gc := range prooftest.GoldenCases(t) {
		files = append(files, gc.Dir+"/new.yaml")
	}
	for _, pattern := range []string{"../../../.cache/crds/prometheus-operator/*.yaml", "../../../.cache/crds/gateway-api/standard/*.yaml",
		"../../../.cache/crds/cluster-api/new/*.yaml"} {
		more, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, more...)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	worst := 0.0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var crd *apiextv1.CustomResourceDefinition
		require.NoError(t, yaml.Unmarshal(data, &crd), f)
		for i := range crd.Spec.Versions {
			version := crd.Spec.Versions[i].Name
			before := heap()
			v, err := newVersionValidator(crd, version, nil, false)
			require.NoError(t, err, f)
			used := heap() - before
			runtime.KeepAlive(v)
			estimate := validatorMemory(crd, version)
			if used > 256<<10 { // large enough to measure
				worst = max(worst, float64(used)/float64(estimate))
			}
			require.LessOrEqualf(t, int64(used), estimate, "%s %s: validators of %d bytes, estimated %d", f, version, used, estimate)
		}
	}
	t.Logf("validators at most %.0f%% of their estimate", 100*worst)
}
