package conversion

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// AnnotationLimit is the apiserver's limit on the total size of an
// object's annotations (keys and values), which a converted object's
// annotations must keep.
const AnnotationLimit = apivalidation.TotalAnnotationSizeLimitB

// DefaultAnnotationThreshold: annotations at three quarters of the limit are
// reported as near it.
const DefaultAnnotationThreshold = AnnotationLimit * 3 / 4

// DefaultBatchSize is the number of objects in one review: a LIST page as
// kubectl and client-go's informers ask for it.
const DefaultBatchSize = 500

// Options tune a probe.
type Options struct {
	// Transport reaches the webhook; nil: the endpoint the new CRD names
	// (a URL webhook; a service webhook needs a Transport).
	Transport Transport
	// ReviewVersions: nil means the new CRD's conversionReviewVersions.
	ReviewVersions []string
	// StoredVersions is the live CRD's status.storedVersions; nil means the
	// new CRD's status.storedVersions.
	StoredVersions []string
	// MaxObjects probes at most this many objects, in the order given; 0:
	// all.
	MaxObjects int
	// Timeout bounds the whole probe; 0: only ctx. Objects not probed when
	// it runs out are reported as not probed, not as passed.
	Timeout time.Duration
	// BatchSize: objects per review; 0: DefaultBatchSize.
	BatchSize int
	// AnnotationThreshold (bytes): annotations of a stored or converted
	// object at least this large are reported; 0: DefaultAnnotationThreshold.
	AnnotationThreshold int
	// NewUID makes request uids (tests); nil: random ones.
	NewUID func() types.UID
}

// Cut says why a probe stopped before every object was probed.
type Cut string

const (
	CutNone       Cut = ""
	CutMaxObjects Cut = "maxObjects"
	CutTimeout    Cut = "timeout"
	// CutUnanswered: no review of the first batch was answered (the
	// webhook is not reachable): the probe stops, having verified
	// nothing (Report.Unverified).
	CutUnanswered Cut = "unanswered"
)

// Skip says why an object was not probed.
type Skip string

const (
	SkipNone Skip = ""
	// SkipVersionNotInCRD: the object is stored at a version the new CRD
	// does not have (the storedVersionRemoval check's finding).
	SkipVersionNotInCRD Skip = "versionNotInCRD"
	// SkipOtherResource: the object is not of the CRD's group and kind.
	SkipOtherResource Skip = "otherResource"
)

// ObjectRef names an object.
type ObjectRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Refusal is a conversion the apiserver would refuse: the resource is
// unreadable at To while the object is stored (a GET of it fails, and so
// does every LIST that holds it).
type Refusal struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Check Check  `json:"check"`
	// Detail is the webhook's message or the values the check compared.
	Detail string `json:"detail,omitempty"`
	// NonStorageHop: From and To are both not the storage version while
	// status.storedVersions holds more than one version, so objects
	// stored at From are read at To through this very conversion (a
	// webhook that converts only to and from its hub fails here).
	NonStorageHop bool `json:"nonStorageHop,omitempty"`
}

// Loss is a round trip that lost or changed fields: Trip is the versions
// the object went through, Paths the fields (at the last version of the
// trip) that no longer hold what they held before the trip, after both
// sides are pruned and defaulted by that version's schema.
type Loss struct {
	Trip  []string `json:"trip"`
	Paths []string `json:"paths"`
}

// AnnotationSize is the largest total annotation size of the object,
// stored or converted, at or over the threshold.
type AnnotationSize struct {
	Version string `json:"version"`
	Bytes   int    `json:"bytes"`
	Limit   int    `json:"limit"`
}

// ObjectResult is what the probe found for one object.
type ObjectResult struct {
	Object        ObjectRef       `json:"object"`
	StoredVersion string          `json:"storedVersion"`
	Skipped       Skip            `json:"skipped,omitempty"`
	Refusals      []Refusal       `json:"refusals,omitempty"`
	Losses        []Loss          `json:"losses,omitempty"`
	Annotations   *AnnotationSize `json:"annotations,omitempty"`
}

// BatchRefusal is a review of several objects that the apiserver's
// converter would refuse while each of its objects alone converts. Reads
// from storage convert one object per review (etcd3's store decodes each
// list item on its own); the converter sends several in one review when it
// is handed a list, so a webhook that fails only on those breaks some
// reads, not every one. Objects is the number of distinct objects in the
// largest such review.
type BatchRefusal struct {
	To      string `json:"to"`
	Objects int    `json:"objects"`
	Check   Check  `json:"check"`
	Detail  string `json:"detail,omitempty"`
}

// Report is the probe's findings, as facts.
type Report struct {
	CRD            string   `json:"crd"`
	StorageVersion string   `json:"storageVersion"`
	ServedVersions []string `json:"servedVersions"`
	StoredVersions []string `json:"storedVersions,omitempty"`
	// Objects given, Probed through every round trip.
	Objects int `json:"objects"`
	Probed  int `json:"probed"`
	Cut     Cut `json:"cut,omitempty"`
	// Reviews sent, Conversions: objects sent in them.
	Reviews     int `json:"reviews"`
	Conversions int `json:"conversions"`
	// Answered: reviews the webhook answered (any answer but a
	// delivery failure, ResponseError.Unanswered).
	Answered int           `json:"answered"`
	Elapsed  time.Duration `json:"elapsed"`
	// Results holds the objects with a finding, sorted by namespace, name.
	Results       []ObjectResult `json:"results,omitempty"`
	BatchRefusals []BatchRefusal `json:"batchRefusals,omitempty"`
}

// Unreadable reports whether some object cannot be read through the new
// conversion.
func (r *Report) Unreadable() bool {
	if len(r.BatchRefusals) > 0 {
		return true
	}
	for _, o := range r.Results {
		if len(o.Refusals) > 0 {
			return true
		}
	}
	return false
}

// Unverified reports whether reviews were sent and the webhook answered
// none of them: nothing the report says about refusals is the webhook's
// verdict (it is not reachable from here, or not deployed yet).
func (r *Report) Unverified() bool {
	return r.Reviews > 0 && r.Answered == 0
}

// Lossy reports whether some round trip lost fields.
func (r *Report) Lossy() bool {
	for _, o := range r.Results {
		if len(o.Losses) > 0 {
			return true
		}
	}
	return false
}

// Probe sends the objects through the conversion webhook of newCRD as the
// apiserver will once newCRD is applied, and reports what it refuses and
// what round trips lose.
//
// Each object is given at the version it is stored at (its apiVersion):
// from --objects files as written; live, as read, which is the version the
// read asked for, not necessarily the one in etcd (only the apiserver sees
// that): an approximation while storedVersions holds several versions,
// which the non-storage round trips below cover for each stored version.
// For each: the read at the new storage version (stored -> storage, the
// form every write then stores), the way back (stored -> storage ->
// stored), a read and write at every other served version (stored -> V ->
// storage, and storage -> V -> storage), and, while storedVersions holds
// more than one version, the reads between two non-storage versions
// (storage -> A -> B for each stored A and served B). Every converted
// object is pruned and defaulted by the schema of its version before it is
// compared or sent on.
func Probe(ctx context.Context, newCRD *apiextv1.CustomResourceDefinition, objects []*unstructured.Unstructured, opts Options) (*Report, error) {
	start := time.Now()
	if newCRD.Spec.Conversion == nil || newCRD.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		return nil, fmt.Errorf("crd %s: %w", newCRD.Name, ErrNoWebhook)
	}
	p, err := newProber(newCRD, opts)
	if err != nil {
		return nil, err
	}
	r := p.report
	r.Objects = len(objects)
	if opts.MaxObjects > 0 && len(objects) > opts.MaxObjects {
		objects = objects[:opts.MaxObjects]
		r.Cut = CutMaxObjects
	}
	pctx := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	for lo := 0; lo < len(objects); lo += p.batch {
		hi := min(lo+p.batch, len(objects))
		results, err := p.probeChunk(pctx, objects[lo:hi])
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("probing conversion of %s: %w", newCRD.Name, ctx.Err())
			}
			if pctx.Err() != nil {
				r.Cut = CutTimeout
				break
			}
			return nil, fmt.Errorf("probing conversion of %s: %w", newCRD.Name, err)
		}
		r.Probed += hi - lo
		r.Results = append(r.Results, results...)
		if r.Unverified() {
			// Nothing answered: the rest would not be either.
			r.Cut = CutUnanswered
			break
		}
	}
	sort.SliceStable(r.Results, func(i, j int) bool {
		a, b := r.Results[i].Object, r.Results[j].Object
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	r.Elapsed = time.Since(start)
	return r, nil
}

type prober struct {
	crd       *apiextv1.CustomResourceDefinition
	gk        schema.GroupKind
	conv      *Converter
	schemas   *schemas
	report    *Report
	batch     int
	threshold int
	versions  map[string]bool
	storedMix bool
}

func newProber(crd *apiextv1.CustomResourceDefinition, opts Options) (*prober, error) {
	tr := opts.Transport
	if tr == nil {
		ep, err := EndpointFor(crd)
		if err != nil {
			return nil, err
		}
		if tr, err = ep.Transport(); err != nil {
			return nil, fmt.Errorf("crd %s: %w", crd.Name, err)
		}
	}
	reviewVersions := opts.ReviewVersions
	if reviewVersions == nil && crd.Spec.Conversion.Webhook != nil {
		reviewVersions = crd.Spec.Conversion.Webhook.ConversionReviewVersions
	}
	sc, err := newSchemas(crd)
	if err != nil {
		return nil, err
	}
	r := &Report{CRD: crd.Name}
	versions := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		versions[v.Name] = true
		if v.Storage {
			r.StorageVersion = v.Name
		}
		if v.Served {
			r.ServedVersions = append(r.ServedVersions, v.Name)
		}
	}
	if r.StorageVersion == "" {
		return nil, fmt.Errorf("crd %s has no storage version", crd.Name)
	}
	r.StoredVersions = opts.StoredVersions
	if r.StoredVersions == nil {
		r.StoredVersions = crd.Status.StoredVersions
	}
	p := &prober{
		crd:       crd,
		gk:        schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind},
		conv:      &Converter{Transport: tr, ReviewVersions: reviewVersions, NewUID: opts.NewUID},
		schemas:   sc,
		report:    r,
		batch:     opts.BatchSize,
		threshold: opts.AnnotationThreshold,
		versions:  versions,
		storedMix: len(r.StoredVersions) > 1,
	}
	if p.batch <= 0 {
		p.batch = DefaultBatchSize
	}
	if p.threshold <= 0 {
		p.threshold = DefaultAnnotationThreshold
	}
	return p, nil
}

// objectState is one object in a chunk.
type objectState struct {
	result *ObjectResult
	orig   *unstructured.Unstructured // at the stored version, pruned and defaulted
	base   *unstructured.Unstructured // at the storage version; nil when refused
}

// trip is a round trip of one object: versions[0] is the version of its
// start (the stored object, or its storage form), then each conversion.
type trip struct {
	obj      int
	fromBase bool
	versions []string
	forms    []*unstructured.Unstructured
	refused  bool
}

func (t *trip) key(level int) string {
	return fmt.Sprintf("%d|%t|%s", t.obj, t.fromBase, strings.Join(t.versions[:level+1], ">"))
}

type hopItem struct {
	key  string
	obj  int
	in   *unstructured.Unstructured
	from string
	to   string
}

type hopResult struct {
	out     *unstructured.Unstructured
	refusal *Refusal
}

func (p *prober) probeChunk(ctx context.Context, objects []*unstructured.Unstructured) ([]ObjectResult, error) {
	storage := p.report.StorageVersion
	states := make([]*objectState, len(objects))
	var live []int
	for i, o := range objects {
		gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
		st := &objectState{result: &ObjectResult{
			Object:        ObjectRef{Namespace: o.GetNamespace(), Name: o.GetName()},
			StoredVersion: gv.Version,
		}}
		states[i] = st
		switch {
		case gv.Group != p.gk.Group || o.GetKind() != p.gk.Kind:
			st.result.Skipped = SkipOtherResource
			continue
		case !p.versions[gv.Version]:
			st.result.Skipped = SkipVersionNotInCRD
			continue
		}
		st.orig = o.DeepCopy()
		p.schemas.normalize(st.orig, gv.Version)
		p.noteAnnotations(st, st.orig, gv.Version)
		live = append(live, i)
	}

	// The read at the storage version: the form every write stores.
	var items []hopItem
	for _, i := range live {
		st := states[i]
		items = append(items, hopItem{key: fmt.Sprint(i), obj: i, in: st.orig, from: st.result.StoredVersion, to: storage})
	}
	done, err := p.hop(ctx, items)
	if err != nil {
		return nil, err
	}
	for _, i := range live {
		h := done[fmt.Sprint(i)]
		if h.refusal != nil {
			p.addRefusal(states[i], *h.refusal)
			continue
		}
		states[i].base = h.out
		p.noteAnnotations(states[i], h.out, storage)
	}

	// The round trips, two conversions each.
	var trips []*trip
	for _, i := range live {
		st := states[i]
		sv := st.result.StoredVersion
		for _, v := range p.report.ServedVersions {
			// An object stored at the storage version starts as its
			// storage form: the trips from it follow.
			if sv != storage && v != sv && v != storage {
				trips = append(trips, &trip{obj: i, versions: []string{sv, v, storage}, forms: []*unstructured.Unstructured{st.orig}})
			}
		}
		if st.base == nil {
			continue
		}
		back := append([]string(nil), p.report.ServedVersions...)
		if !contains(back, sv) {
			back = append(back, sv)
		}
		for _, v := range back {
			if v != storage {
				trips = append(trips, &trip{obj: i, fromBase: true, versions: []string{storage, v, storage}, forms: []*unstructured.Unstructured{st.base}})
			}
		}
		if p.storedMix {
			for _, a := range p.report.StoredVersions {
				if a == storage || !p.versions[a] {
					continue
				}
				for _, b := range p.report.ServedVersions {
					if b != a && b != storage {
						trips = append(trips, &trip{obj: i, fromBase: true, versions: []string{storage, a, b}, forms: []*unstructured.Unstructured{st.base}})
					}
				}
			}
		}
	}
	refusedKeys := map[string]bool{}
	for level := 1; level <= 2; level++ {
		seen := map[string]bool{}
		items = items[:0]
		for _, t := range trips {
			if t.refused || len(t.versions) <= level {
				continue
			}
			k := t.key(level)
			if seen[k] {
				continue
			}
			seen[k] = true
			items = append(items, hopItem{key: k, obj: t.obj, in: t.forms[level-1], from: t.versions[level-1], to: t.versions[level]})
		}
		done, err := p.hop(ctx, items)
		if err != nil {
			return nil, err
		}
		for _, t := range trips {
			if t.refused || len(t.versions) <= level {
				continue
			}
			k := t.key(level)
			h := done[k]
			if h.refusal != nil {
				t.refused = true
				if !refusedKeys[k] {
					refusedKeys[k] = true
					p.addRefusal(states[t.obj], *h.refusal)
				}
				continue
			}
			t.forms = append(t.forms, h.out)
			p.noteAnnotations(states[t.obj], h.out, t.versions[level])
		}
	}

	// The comparisons.
	for _, t := range trips {
		st := states[t.obj]
		if t.refused || st.base == nil {
			continue
		}
		if t.fromBase && t.versions[1] == st.result.StoredVersion && t.versions[2] == storage {
			// storage -> stored: the way back of the stored object.
			if paths := lostPaths(st.orig.Object, t.forms[1].Object); len(paths) > 0 {
				st.result.Losses = append(st.result.Losses, Loss{Trip: []string{st.result.StoredVersion, storage, st.result.StoredVersion}, Paths: paths})
			}
		}
		if t.versions[2] != storage {
			continue
		}
		if paths := lostPaths(st.base.Object, t.forms[2].Object); len(paths) > 0 {
			st.result.Losses = append(st.result.Losses, Loss{Trip: append([]string(nil), t.versions...), Paths: paths})
		}
	}

	var out []ObjectResult
	for _, st := range states {
		r := st.result
		if r.Skipped != SkipNone || len(r.Refusals) > 0 || len(r.Losses) > 0 || r.Annotations != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *prober) addRefusal(st *objectState, r Refusal) {
	for _, have := range st.result.Refusals {
		if have.From == r.From && have.To == r.To && have.Check == r.Check {
			return
		}
	}
	st.result.Refusals = append(st.result.Refusals, r)
}

func (p *prober) noteAnnotations(st *objectState, u *unstructured.Unstructured, version string) {
	size := 0
	for k, v := range u.GetAnnotations() {
		size += len(k) + len(v)
	}
	if size < p.threshold {
		return
	}
	if a := st.result.Annotations; a == nil || size > a.Bytes {
		st.result.Annotations = &AnnotationSize{Version: version, Bytes: size, Limit: AnnotationLimit}
	}
}

// reviews splits items into reviews: by target version, in the order the
// targets first appear, at most one form of an object and at most the
// batch size per review (objects at different versions share a review, as
// in the converter's list path; the apiserver never sends an object twice
// in one).
func (p *prober) reviews(items []hopItem) [][]hopItem {
	type review struct {
		items []hopItem
		objs  map[int]bool
	}
	var targets []string
	byTarget := map[string][]*review{}
	for _, it := range items {
		rs, ok := byTarget[it.to]
		if !ok {
			targets = append(targets, it.to)
		}
		var into *review
		for _, r := range rs {
			if len(r.items) < p.batch && !r.objs[it.obj] {
				into = r
				break
			}
		}
		if into == nil {
			into = &review{objs: map[int]bool{}}
			byTarget[it.to] = append(rs, into)
		}
		into.items = append(into.items, it)
		into.objs[it.obj] = true
	}
	var out [][]hopItem
	for _, to := range targets {
		for _, r := range byTarget[to] {
			out = append(out, r.items)
		}
	}
	return out
}

// hop converts each item to its target version, in the reviews of
// p.reviews. A refused review is tried again
// one object at a time to name the objects it refuses; converted objects
// are pruned and defaulted by the target's schema.
func (p *prober) hop(ctx context.Context, items []hopItem) (map[string]hopResult, error) {
	done := make(map[string]hopResult, len(items))
	for _, group := range p.reviews(items) {
		to := group[0].to
		gv := schema.GroupVersion{Group: p.gk.Group, Version: to}
		err := p.convert(ctx, group, gv, done)
		var re *ResponseError
		if err == nil {
			continue
		}
		if !errors.As(err, &re) {
			return nil, err
		}
		if len(group) == 1 || re.Unanswered {
			// Unanswered: no object alone would be answered either.
			for _, it := range group {
				done[it.key] = hopResult{refusal: p.refusal(it, re)}
			}
			continue
		}
		anyAlone := false
		for _, it := range group {
			err := p.convert(ctx, []hopItem{it}, gv, done)
			if err == nil {
				continue
			}
			if !errors.As(err, &re) {
				return nil, err
			}
			anyAlone = true
			done[it.key] = hopResult{refusal: p.refusal(it, re)}
		}
		if !anyAlone {
			p.addBatchRefusal(BatchRefusal{To: to, Objects: distinctSent(group, gv), Check: re.Check, Detail: re.Detail})
		}
	}
	return done, nil
}

// addBatchRefusal keeps one fact per version and check: the largest
// review refused.
func (p *prober) addBatchRefusal(b BatchRefusal) {
	for i, have := range p.report.BatchRefusals {
		if have.To == b.To && have.Check == b.Check {
			if b.Objects > have.Objects {
				p.report.BatchRefusals[i] = b
			}
			return
		}
	}
	p.report.BatchRefusals = append(p.report.BatchRefusals, b)
}

// distinctSent counts the objects a review held (an object may travel
// more than one round trip in one review).
func distinctSent(group []hopItem, gv schema.GroupVersion) int {
	seen := map[int]bool{}
	for _, it := range group {
		if it.in.GetAPIVersion() != gv.String() {
			seen[it.obj] = true
		}
	}
	return len(seen)
}

func sentCount(group []hopItem, gv schema.GroupVersion) int {
	n := 0
	for _, it := range group {
		if it.in.GetAPIVersion() != gv.String() {
			n++
		}
	}
	return n
}

func (p *prober) refusal(it hopItem, re *ResponseError) *Refusal {
	storage := p.report.StorageVersion
	return &Refusal{
		From: it.from, To: it.to, Check: re.Check, Detail: re.Detail,
		NonStorageHop: p.storedMix && it.from != storage && it.to != storage && it.from != it.to,
	}
}

func (p *prober) convert(ctx context.Context, group []hopItem, gv schema.GroupVersion, done map[string]hopResult) error {
	in := make([]*unstructured.Unstructured, len(group))
	for i, it := range group {
		in[i] = it.in
	}
	sent := sentCount(group, gv)
	out, err := p.conv.Convert(ctx, in, gv)
	var re *ResponseError
	if sent > 0 && (err == nil || errors.As(err, &re)) {
		// Sent and answered or refused; a review the context ended is
		// none.
		p.report.Reviews++
		p.report.Conversions += sent
		if err == nil || !re.Unanswered {
			p.report.Answered++
		}
	}
	if err != nil {
		return err
	}
	for i, it := range group {
		u := out[i]
		if u == it.in {
			u = u.DeepCopy()
		}
		p.schemas.normalize(u, gv.Version)
		done[it.key] = hopResult{out: u}
	}
	return nil
}
