package conversion

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestProbe(t *testing.T) {
	a, b, c, d := ObjectRef{"ns", "a"}, ObjectRef{"ns", "b"}, ObjectRef{"ns", "c"}, ObjectRef{"ns", "d"}
	stash := 200<<10 + len("example.com/stash")
	cases := []struct {
		name    string
		hook    hook
		objects []*unstructured.Unstructured // nil: widgets()
		opts    Options
		want    []ObjectResult
		// wantProbed, wantCut, wantBatch: the budget and list facts.
		wantProbed int
		wantCut    Cut
		wantBatch  []BatchRefusal
	}{
		{name: "lossless rename: nothing to report", hook: hook{}, wantProbed: 4},
		{name: "lossy: the field dropped on the way to v2, on every round trip through v2",
			hook: hook{Lossy: true}, wantProbed: 4,
			want: []ObjectResult{
				{Object: a, StoredVersion: "v1", Losses: []Loss{{Trip: []string{"v1", "v2", "v1"}, Paths: []string{".spec.color"}}}},
				{Object: b, StoredVersion: "v2", Losses: []Loss{
					{Trip: []string{"v2", "v1", "v2"}, Paths: []string{".spec.color"}},
					{Trip: []string{"v2", "v3", "v2"}, Paths: []string{".spec.color"}}}},
				{Object: d, StoredVersion: "v2", Losses: []Loss{
					{Trip: []string{"v2", "v1", "v2"}, Paths: []string{".spec.color"}},
					{Trip: []string{"v2", "v3", "v2"}, Paths: []string{".spec.color"}}}},
			}},
		{name: "failing on one object: it is named, the others pass", hook: hook{FailLabel: true}, wantProbed: 4,
			want: []ObjectResult{{Object: c, StoredVersion: "v1", Refusals: []Refusal{
				{From: "v1", To: "v2", Check: CheckResult},
				{From: "v1", To: "v3", Check: CheckResult, NonStorageHop: true}}}}},
		{name: "hub only with storedVersions [v1 v2]: v1 -> v3 fails for every object",
			hook: hook{HubOnly: true}, wantProbed: 4,
			want: []ObjectResult{
				{Object: a, StoredVersion: "v1", Refusals: []Refusal{{From: "v1", To: "v3", Check: CheckResult, NonStorageHop: true}}},
				{Object: b, StoredVersion: "v2", Refusals: []Refusal{{From: "v1", To: "v3", Check: CheckResult, NonStorageHop: true}}},
				{Object: c, StoredVersion: "v1", Refusals: []Refusal{{From: "v1", To: "v3", Check: CheckResult, NonStorageHop: true}}},
				{Object: d, StoredVersion: "v2", Refusals: []Refusal{{From: "v1", To: "v3", Check: CheckResult, NonStorageHop: true}}},
			}},
		{name: "hub only with storedVersions [v2]: objects all at v2 read fine",
			hook: hook{HubOnly: true}, opts: Options{StoredVersions: []string{"v2"}}, wantProbed: 2,
			objects: []*unstructured.Unstructured{widgets()[1], widgets()[3]}},
		{name: "wrong uid: every object unreadable", hook: hook{WrongUID: true}, wantProbed: 4,
			want: []ObjectResult{
				{Object: a, StoredVersion: "v1", Refusals: []Refusal{{From: "v1", To: "v2", Check: CheckUID}, {From: "v1", To: "v3", Check: CheckUID, NonStorageHop: true}}},
				{Object: b, StoredVersion: "v2", Refusals: []Refusal{{From: "v2", To: "v1", Check: CheckUID}, {From: "v2", To: "v3", Check: CheckUID}}},
				{Object: c, StoredVersion: "v1", Refusals: []Refusal{{From: "v1", To: "v2", Check: CheckUID}, {From: "v1", To: "v3", Check: CheckUID, NonStorageHop: true}}},
				{Object: d, StoredVersion: "v2", Refusals: []Refusal{{From: "v2", To: "v1", Check: CheckUID}, {From: "v2", To: "v3", Check: CheckUID}}},
			}},
		{name: "a review of several objects refused while each alone passes: a LIST fails",
			hook: hook{OneAtATime: true}, wantProbed: 4,
			wantBatch: []BatchRefusal{{To: "v2", Objects: 4, Check: CheckResult}, {To: "v3", Objects: 4, Check: CheckResult}, {To: "v1", Objects: 4, Check: CheckResult}}},
		{name: "batchSize 1: no review holds several objects", hook: hook{OneAtATime: true}, wantProbed: 4,
			opts: Options{BatchSize: 1}},
		{name: "reviewVersions v1beta1 to a webhook answering v1: every read fails", hook: hook{}, wantProbed: 2,
			objects: []*unstructured.Unstructured{widgets()[0], widgets()[1]}, opts: Options{ReviewVersions: []string{"v1beta1"}},
			want: []ObjectResult{
				{Object: a, StoredVersion: "v1", Refusals: []Refusal{{From: "v1", To: "v2", Check: CheckCall}, {From: "v1", To: "v3", Check: CheckCall, NonStorageHop: true}}},
				{Object: b, StoredVersion: "v2", Refusals: []Refusal{{From: "v2", To: "v1", Check: CheckCall}, {From: "v2", To: "v3", Check: CheckCall}}},
			}},
		{name: "stash annotations near the limit", hook: hook{Stash: 200 << 10}, wantProbed: 4,
			want: []ObjectResult{
				{Object: a, StoredVersion: "v1", Annotations: &AnnotationSize{Version: "v2", Bytes: stash, Limit: AnnotationLimit}},
				{Object: b, StoredVersion: "v2", Annotations: &AnnotationSize{Version: "v2", Bytes: stash, Limit: AnnotationLimit}},
				{Object: c, StoredVersion: "v1", Annotations: &AnnotationSize{Version: "v2", Bytes: stash, Limit: AnnotationLimit}},
				{Object: d, StoredVersion: "v2", Annotations: &AnnotationSize{Version: "v2", Bytes: stash, Limit: AnnotationLimit}},
			}},
		{name: "annotationThreshold above the stash: not reported", hook: hook{Stash: 200 << 10},
			opts: Options{AnnotationThreshold: 250 << 10}, wantProbed: 4},
		{name: "a field pruned anyway and a default are no loss", hook: hook{Typed: true}, wantProbed: 1,
			objects: []*unstructured.Unstructured{withField(widget("e", "v1", "eps", 5, "", nil), "unknown", "x")}},
		{name: "an object at a version the CRD lacks is skipped", hook: hook{}, wantProbed: 1,
			objects: []*unstructured.Unstructured{widget("f", "v0", "phi", 6, "", nil)},
			want:    []ObjectResult{{Object: ObjectRef{"ns", "f"}, StoredVersion: "v0", Skipped: SkipVersionNotInCRD}}},
		{name: "maxObjects cuts the probe and says so", hook: hook{FailLabel: true},
			opts: Options{MaxObjects: 2}, wantProbed: 2, wantCut: CutMaxObjects},
		{name: "the time budget cuts the probe and says so", hook: hook{Delay: 30 * time.Millisecond},
			opts: Options{Timeout: 100 * time.Millisecond, BatchSize: 1}, wantProbed: 0, wantCut: CutTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd, _ := serve(t, &tc.hook)
			objects := tc.objects
			if objects == nil {
				objects = widgets()
			}
			before := copies(objects)
			r, err := Probe(context.Background(), crd, objects, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(objects, before) {
				t.Error("the probe changed its input objects")
			}
			for i := range r.Results {
				for j := range r.Results[i].Refusals {
					if r.Results[i].Refusals[j].Detail == "" {
						t.Errorf("%s: refusal without detail", r.Results[i].Object)
					}
					r.Results[i].Refusals[j].Detail = ""
				}
			}
			for i := range r.BatchRefusals {
				r.BatchRefusals[i].Detail = ""
			}
			if !reflect.DeepEqual(r.Results, tc.want) {
				t.Errorf("results\n got %+v\nwant %+v", r.Results, tc.want)
			}
			if !reflect.DeepEqual(r.BatchRefusals, tc.wantBatch) {
				t.Errorf("batch refusals\n got %+v\nwant %+v", r.BatchRefusals, tc.wantBatch)
			}
			if r.Probed != tc.wantProbed || r.Cut != tc.wantCut || r.Objects != len(objects) {
				t.Errorf("probed %d of %d, cut %q; want %d of %d, cut %q", r.Probed, r.Objects, r.Cut, tc.wantProbed, len(objects), tc.wantCut)
			}
			if r.Unreadable() != (len(tc.wantBatch) > 0 || hasRefusal(tc.want)) {
				t.Errorf("Unreadable() = %t", r.Unreadable())
			}
			if tc.wantCut == CutTimeout {
				return
			}
			// The apiserver's converter refuses a read of a stored object
			// at a served version exactly when the probe reports it.
			if tc.opts.ReviewVersions != nil {
				crd.Spec.Conversion.Webhook.ConversionReviewVersions = tc.opts.ReviewVersions
			}
			apiserver := oracle(t, crd)
			refused := map[string]bool{}
			for _, o := range r.Results {
				for _, rf := range o.Refusals {
					refused[o.Object.Name+"|"+rf.From+"|"+rf.To] = true
				}
			}
			for _, o := range objects[:r.Probed] {
				sv := schema.FromAPIVersionAndKind(o.GetAPIVersion(), "").Version
				for _, v := range r.ServedVersions {
					if v == sv || sv == "v0" {
						continue
					}
					_, err := apiserver.ConvertToVersion(o.DeepCopy(), schema.GroupVersion{Group: "example.com", Version: v})
					if got := refused[o.GetName()+"|"+sv+"|"+v]; got != (err != nil) {
						t.Errorf("%s %s -> %s: probe refused %t, apiserver error %v", o.GetName(), sv, v, got, err)
					}
				}
			}
		})
	}
}

func hasRefusal(rs []ObjectResult) bool {
	for _, r := range rs {
		if len(r.Refusals) > 0 {
			return true
		}
	}
	return false
}

func withField(u *unstructured.Unstructured, f string, v any) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(u.Object, v, "spec", f)
	return u
}

func TestProbeNeedsAWebhook(t *testing.T) {
	crd := widgetsCRD(t)
	crd.Spec.Conversion.Strategy = "None"
	if _, err := Probe(context.Background(), crd, widgets(), Options{}); !errors.Is(err, ErrNoWebhook) {
		t.Fatalf("error %v, want ErrNoWebhook", err)
	}
}

// A canceled context is an error, not a cut budget: the caller stopped.
func TestProbeCanceled(t *testing.T) {
	crd, _ := serve(t, &hook{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Probe(ctx, crd, widgets(), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// A webhook that does not answer verifies nothing: the probe says so
// (Unverified) and stops after the first batch, instead of reporting the
// webhook's verdict on every object; one that answers, even with an
// error, is refusing.
func TestProbeUnanswered(t *testing.T) {
	cases := []struct {
		name       string
		hook       hook
		closed     bool // the server is gone: connection refused
		unverified bool
	}{
		{name: "connection refused", closed: true, unverified: true},
		{name: "503 from a gateway", hook: hook{HttpStatus: 503}, unverified: true},
		{name: "502 from a gateway", hook: hook{HttpStatus: 502}, unverified: true},
		{name: "500 from the webhook: an answer, every read refused", hook: hook{HttpStatus: 500}},
		{name: "a refusal in the review: an answer", hook: hook{FailLabel: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd, _ := serve(t, &tc.hook)
			if tc.closed {
				// A port nothing listens on.
				u := "https://127.0.0.1:1/convert"
				crd.Spec.Conversion.Webhook.ClientConfig.URL = &u
			}
			r, err := Probe(context.Background(), crd, widgets(), Options{BatchSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r.Unverified() != tc.unverified {
				t.Fatalf("Unverified() = %t (reviews %d, answered %d)", r.Unverified(), r.Reviews, r.Answered)
			}
			if tc.unverified {
				if r.Cut != CutUnanswered || r.Probed != 2 {
					t.Errorf("cut %q after %d objects, want %q after the first batch of 2", r.Cut, r.Probed, CutUnanswered)
				}
				if r.Reviews > 4 {
					t.Errorf("%d reviews sent to a webhook that answers none: an unanswered review is not retried per object", r.Reviews)
				}
			} else if !r.Unreadable() {
				t.Error("an answering webhook that refuses: Unreadable() = false")
			}
		})
	}
}
