package webhook

import (
	"fmt"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// crdFiles are the CRDs of the tests: every testdata case of the engine,
// and the real CRDs of hack/fetch-crds.sh when they are there.
func crdFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../crdupgradesafety/testdata/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.Glob("../../../.cache/crds/*/*.yaml")
	real2, _ := filepath.Glob("../../../.cache/crds/*/*/*.yaml")
	files = append(append(files, real...), real2...)
	if len(files) < 100 {
		t.Fatalf("only %d CRD files", len(files))
	}
	return files
}

// TestFastDecodeMatches: the fast decoder decodes every CRD of the tests
// as encoding/json does (the slow path, today's decoding).
func TestFastDecodeMatches(t *testing.T) {
	n := 0
	for _, f := range crdFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			raw, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil || !strings.Contains(string(raw), `"CustomResourceDefinition"`) {
				continue
			}
			slow, slowErr := decodeCRD("object", raw)
			fast, fastErr := decodeCRDFast(raw)
			if slowErr != nil && !strings.Contains(slowErr.Error(), "is a") {
				if fastErr == nil {
					t.Errorf("%s: the fast decoder accepts what encoding/json refuses: %v", f, slowErr)
				}
				continue
			}
			if fastErr != nil {
				t.Errorf("%s: %v", f, fastErr)
				continue
			}
			if !reflect.DeepEqual(slow, fast) {
				t.Errorf("%s: decoded differently", f)
			}
			n++
		}
	}
	t.Logf("%d CRDs decoded alike", n)
}

// TestFastDecodeUnions: the union types of a schema (items,
// additionalProperties, dependencies, JSON values) in every form decode as
// their UnmarshalJSON methods decode them, errors included.
func TestFastDecodeUnions(t *testing.T) {
	schemas := []string{
		`{"type":"array","items":{"type":"string"}}`,
		`{"type":"array","items":[{"type":"string"},{"type":"integer"}]}`,
		`{"type":"array","items":null}`,
		`{"type":"array","items":true}`,
		`{"type":"array","items":"x"}`,
		`{"type":"array","items":[]}`,
		`{"type":"array","items":[1]}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","additionalProperties":true}`,
		`{"type":"object","additionalProperties":false}`,
		`{"type":"object","additionalProperties":null}`,
		`{"type":"object","additionalProperties":"x"}`,
		`{"type":"object","additionalProperties":1}`,
		`{"type":"array","additionalItems":false}`,
		`{"type":"object","dependencies":{"a":["b","c"],"d":{"type":"object"},"e":null,"f":"x"}}`,
		`{"type":"object","dependencies":{"a":[1]}}`,
		`{"type":"string","enum":["a",null,1,{"x":[1, 2 ]}],"default":null,"example":{"a":1}}`,
		`{"type":"string","default":"x","example":null}`,
		`{"type":"string","maxLength":1.5}`,
		`{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"integer"}}}`,
		`{"type":"object","Properties":{"a":{"type":"string"}}}`,
		`{"type":"object","x-kubernetes-validations":[{"rule":"self.a > 1","messageExpression":"'x'"}]}`,
	}
	for _, s := range schemas {
		raw := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b.c"},` +
			`"spec":{"group":"b.c","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` + s + `}}]}}`)
		slow, slowErr := decodeCRD("object", raw)
		fast, fastErr := decodeCRDFast(raw)
		switch {
		case (slowErr == nil) != (fastErr == nil):
			t.Errorf("%s: encoding/json: %v, fast: %v", s, slowErr, fastErr)
		case slowErr == nil && !reflect.DeepEqual(slow, fast):
			t.Errorf("%s: decoded differently:\n%#v\n%#v", s, slow.Spec.Versions[0].Schema.OpenAPIV3Schema,
				fast.Spec.Versions[0].Schema.OpenAPIV3Schema)
		}
	}
}

// TestFastDecodeReviewMatches: a review decodes as the slow path decodes it
// (request fields, both CRDs), and bodies the fast path refuses go to the
// slow path.
func TestFastDecodeReviewMatches(t *testing.T) {
	oldCRD, newCRD := readCRD(t, "../crdupgradesafety/testdata/prohibited-type-changed/old.yaml"),
		readCRD(t, "../crdupgradesafety/testdata/prohibited-type-changed/new.yaml")
	for _, op := range []admissionv1.Operation{admissionv1.Update, admissionv1.Delete, admissionv1.Create} {
		var n, o *apiextv1.CustomResourceDefinition
		switch op {
		case admissionv1.Update:
			n, o = newCRD, oldCRD
		case admissionv1.Delete:
			o = oldCRD
		case admissionv1.Create:
			n = newCRD
		}
		req, err := webhooktest.Request(op, n, o)
		if err != nil {
			t.Fatal(err)
		}
		dry := true
		req.DryRun = &dry
		req.Options.Raw = []byte(`{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1"}`)
		body, err := webhooktest.Review(req)
		if err != nil {
			t.Fatal(err)
		}
		fastReview, fastObjs, ok := fastDecodeReview(body, newCRDCache(DefaultCRDCacheBytes))
		if !ok {
			t.Fatalf("%s: the fast path refused the review", op)
		}
		slowReview, slowObjs, ok := decodeReviewSlow(body)
		if !ok {
			t.Fatalf("%s: %v", op, slowObjs.err)
		}
		if fastObjs.key == "" {
			t.Errorf("%s: no key", op)
		}
		fastObjs.key = "" // the slow path gives none: its reviews share nothing
		if !equality.Semantic.DeepEqual(fastReview, slowReview) || !reflect.DeepEqual(fastObjs, slowObjs) {
			t.Errorf("%s: decoded differently:\n%+v\n%+v", op, fastReview.Request, slowReview.Request)
		}
	}
	for _, body := range []string{
		`not json`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","object":{"kind":1}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","object":{"apiVersion":"v1","kind":"ConfigMap"}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"DELETE","oldObject":"x"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"UPDATE","object":[],"oldObject":null}}`,
	} {
		fastReview, fastObjs, fastOK := fastDecodeReview([]byte(body), nil)
		slowReview, slowObjs, slowOK := decodeReviewSlow([]byte(body))
		if fastOK && !slowOK {
			t.Errorf("%s: the fast path accepts what the slow one refuses: %v", body, slowObjs.err)
		}
		if fastOK {
			fastObjs.key = ""
			if !equality.Semantic.DeepEqual(fastReview, slowReview) || !reflect.DeepEqual(fastObjs.newCRD, slowObjs.newCRD) ||
				!reflect.DeepEqual(fastObjs.oldCRD, slowObjs.oldCRD) || fmt.Sprint(fastObjs.err) != fmt.Sprint(slowObjs.err) {
				t.Errorf("%s: decoded differently: %+v, %+v", body, fastObjs, slowObjs)
			}
		}
	}
}

// TestCRDCache: a review's old CRD comes from the cache only when its
// bytes are the same; a changed old CRD (here only its resourceVersion)
// is decoded anew; the cache stays within its bound.
func TestCRDCache(t *testing.T) {
	crd := readCRD(t, "../crdupgradesafety/testdata/prohibited-type-changed/old.yaml")
	crd.ResourceVersion = "1"
	raw1 := mustJSON(t, crd)
	crd.ResourceVersion = "2"
	raw2 := mustJSON(t, crd)
	maxBytes := crdMemory(raw1) + crdMemory(raw2) - 1 // room for one
	c := newCRDCache(maxBytes)
	a, _, err := c.get(raw1)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := c.get(raw1)
	if a != b || c.cache.Stats().Hits != 1 {
		t.Fatalf("the same bytes were not served from the cache (hits %d)", c.cache.Stats().Hits)
	}
	d, _, _ := c.get(raw2)
	if d == a || d.ResourceVersion != "2" {
		t.Fatalf("a changed old CRD was served from the cache: resourceVersion %s", d.ResourceVersion)
	}
	if st := c.cache.Stats(); st.Entries != 1 || st.Bytes != crdMemory(raw2) || st.Evicted != 1 {
		t.Fatalf("the cache holds %d entries, %d bytes, over its bound %d", st.Entries, st.Bytes, maxBytes)
	}
	e, _, _ := c.get(raw1)
	if e == a || e.ResourceVersion != "1" || c.cache.Stats().Hits != 1 {
		t.Fatal("an evicted CRD was served")
	}
}

func readCRD(t testing.TB, path string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCachedCRDsUnchangedByReviews: the cache shares a decoded stored CRD
// and a decoded new CRD between reviews (and their comparison: the
// reviewer's evaluation.Comparisons), which must therefore leave them as
// they are: after every testdata pair is reviewed through the handler
// twice (the second time both CRDs and the comparison from the caches),
// with stored objects to read, the cached CRDs equal a fresh decoding of
// their JSON, and both reviews got the same answer, the one of a handler
// without caches.
func TestCachedCRDsUnchangedByReviews(t *testing.T) {
	cluster := &evaluationtest.Cluster{Objs: []map[string]any{{"apiVersion": "x/v1", "kind": "X",
		"metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{}}}}
	r, _ := reviewer(t, nil, cluster)
	h := NewHandler(r, 0)
	uncached := *r
	uncached.Comparisons = evaluation.NewComparisons(0) // none kept
	noCache := NewHandler(&uncached, 0)
	noCache.crds = nil
	raws := map[string][]byte{}
	n := 0
	for _, pair := range testcrd.Pairs(t, "../crdupgradesafety/testdata") {
		dir, oldCRD, newCRD := pair.Dir, pair.Old, pair.New
		req, err := webhooktest.Request(admissionv1.Update, newCRD, oldCRD)
		if err != nil {
			t.Fatal(err)
		}
		body, err := webhooktest.Review(req)
		if err != nil {
			t.Fatal(err)
		}
		first := post(h, ValidatePath, "application/json", body)
		second := post(h, ValidatePath, "application/json", body)
		uncached := post(noCache, ValidatePath, "application/json", body)
		if first.Code != http.StatusOK || first.Body.String() != second.Body.String() || first.Body.String() != uncached.Body.String() {
			t.Errorf("%s: the review from the cache answered differently:\n%s\n%s\nwithout a cache:\n%s", dir, first.Body, second.Body, uncached.Body)
		}
		raws[dir+" old"] = req.OldObject.Raw
		raws[dir+" new"] = req.Object.Raw
		n++
	}
	if hits := h.crds.cache.Stats().Hits; hits < 2*n {
		t.Fatalf("%d CRDs from the cache, want %d (old and new of %d reviews)", hits, 2*n, n)
	}
	for dir, raw := range raws {
		cached, _, err := h.crds.get(raw)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := decodeCRDFast(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cached, fresh) {
			t.Errorf("%s: a review changed the cached stored CRD", dir)
		}
	}
}

// TestCRDSizeEstimate: the memory of a decoded CRD, measured on the heap,
// is within its estimate (crdMemory) for the testdata CRDs and the real
// CRDs of hack/fetch-crds.sh (when fetched): the cache's byte bound holds.
func TestCRDSizeEstimate(t *testing.T) {
	files, err := filepath.Glob("../crdupgradesafety/testdata/*/new.yaml")
	require.NoError(t, err)
	for _, pattern := range []string{"../../../.cache/crds/*/*.yaml", "../../../.cache/crds/*/*/*.yaml"} {
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
	var largest float64
	for _, f := range files {
		raw := mustJSON(t, readCRD(t, f))
		if len(raw) < 16<<10 { // too small to measure on the heap
			continue
		}
		before := heap()
		crd, err := decodeCRDFast(raw)
		require.NoError(t, err)
		used := heap() - before
		runtime.KeepAlive(crd)
		require.LessOrEqualf(t, int64(used), crdMemory(raw), "%s: %d bytes of JSON hold %d bytes decoded", f, len(raw), used)
		largest = max(largest, float64(used)/float64(len(raw)))
	}
	t.Logf("at most %.2f bytes decoded per byte of JSON (estimate: %d)", largest, crdMemoryFactor)
}
