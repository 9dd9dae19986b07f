package crdupgradesafety

// A built-in proof of no false negatives. For CRD pairs (every golden case,
// in both directions, and random mutations of real CRDs), objects valid
// under the old schema are stored and read back under the new one the way
// kube-apiserver does it, with its own code (proof_apiserver_test.go):
//
//   - create under the old schema: decode (metadata coercion, pruning,
//     nulls the schema does not allow dropped, defaulting), then the custom
//     resource strategy's validation (OpenAPI schema, metadata and embedded
//     resources, list sets and maps, CEL rules); objects it rejects are
//     discarded: they cannot be stored.
//   - read under the new schema: the decoding a read from etcd applies
//     (the same steps, dropping malformed metadata), compared with what was
//     stored: any field pruned, nulled or defaulted differently is a change.
//   - the same request under the new schema: decoding the original request
//     under the new schema, compared with what the old one stored: a
//     default added, changed or removed is a change.
//   - validation of both under the new schema, as a create (no ratcheting,
//     transition rules do not run): the object read back is what a client
//     writes back (an update that keeps a field the new schema rejects is
//     forgiven only by ratcheting, which stops as soon as the field is
//     touched, and never applies to the same manifest applied to another
//     cluster); any error is a change at its field.
//
// Every change must be covered by a finding of Compare (any severity, under
// failMode open: "unhandled" does not count) in that version, at the change's field or an ancestor (a finding inside a
// combinator branch covers the field the branch constrains, and the node
// that carries the combinator), or a CRD-level finding. Changes at fields
// no stored object can hold (a new field's default) are the "new optional
// field" rule of docs/checks.md and do not count.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// proofStats are the counts a proof run reports.
type proofStats struct {
	pairs     int // CRD pairs compared
	versions  int // versions proven
	generated int // objects generated
	stored    int // objects the old schema accepted
	changed   int // stored objects the new schema rejects, prunes or defaults differently
	misses    int // changes no finding covers
	residual  int // effects the ObjectReader joined to no finding
}

func (s proofStats) String() string {
	return fmt.Sprintf("%d CRD pairs, %d versions, %d objects generated, %d stored under the old schema, %d changed under the new one, %d uncovered changes, %d effects joined to no finding",
		s.pairs, s.versions, s.generated, s.stored, s.changed, s.misses, s.residual)
}

func (s *proofStats) add(o proofStats) {
	s.pairs += o.pairs
	s.versions += o.versions
	s.generated += o.generated
	s.stored += o.stored
	s.changed += o.changed
	s.misses += o.misses
	s.residual += o.residual
}

// dataChange is one difference the apiserver makes between the old and the new
// schema for a stored object.
type dataChange struct {
	path  dataPath
	field string // engine field path, in the shape of the new schema
	// oldField is the same data path in the shape of the old schema (a map
	// entry {*} there may be a property or an unknown field now).
	oldField string
	reason   string
}

// proofRun proves one CRD pair.
type proofRun struct {
	tb       testing.TB
	name     string
	old, new *apiextv1.CustomResourceDefinition
	r        *rand.Rand
	focus    string // engine field path to aim the objects at ("" for all)
	objects  int    // objects to generate per version
	stats    proofStats
	// maxMisses stops reporting after this many uncovered changes.
	maxMisses int
	// compare overrides Compare under the default policy (to test the
	// harness).
	compare func(old, new *apiextv1.CustomResourceDefinition) []finding.Finding
	// version, when set, is the only version proven (the one a mutation
	// changed).
	version string
	// served caches the old CRD's served schemas across runs.
	served map[string]*prooftest.ServedSchema
}

// servedSchema returns crd's version as served, from the cache for the
// old CRD.
func (p *proofRun) servedSchema(crd *apiextv1.CustomResourceDefinition, version string) *prooftest.ServedSchema {
	if crd == p.old && p.served != nil {
		if s, ok := p.served[version]; ok {
			return s
		}
	}
	s, err := prooftest.NewServedSchema(crd, version)
	if err != nil {
		p.tb.Fatalf("%s: version %s: %v", p.name, version, err)
	}
	if crd == p.old && p.served != nil {
		p.served[version] = s
	}
	return s
}

func (p *proofRun) run() {
	p.stats.pairs++
	compare := p.compare
	if compare == nil {
		compare = proofCompare
	}
	findings := compare(p.old, p.new)
	newVersions := checks.VersionsByName(p.new)
	for _, ov := range p.old.Spec.Versions {
		if _, ok := newVersions[ov.Name]; !ok || p.version != "" && ov.Name != p.version {
			continue
		}
		mo, mn := p.servedSchema(p.old, ov.Name), p.servedSchema(p.new, ov.Name)
		p.stats.versions++
		gen := prooftest.NewObjGen(p.r, p.focus)
		var storedObjs []map[string]any
		for range p.objects {
			p.stats.generated++
			raw := gen.Object(mo.GVK.GroupVersion().String(), mo.GVK.Kind, mo.Namespaced, mo.Structural, mn.Structural)
			changes, stored := p.prove(mo, mn, raw)
			if stored == nil {
				continue
			}
			storedObjs = append(storedObjs, stored)
			p.stats.stored++
			if len(changes) > 0 {
				p.stats.changed++
			}
			for _, c := range changes {
				if covered(findings, ov.Name, c.field) || covered(findings, ov.Name, c.oldField) {
					continue
				}
				p.stats.misses++
				if p.stats.misses <= p.maxMisses {
					obj, _ := json.Marshal(raw)
					p.tb.Errorf("%s: version %s: no finding covers %s at %s (%s)\n  object: %s\n  findings:\n%s",
						p.name, ov.Name, c.reason, c.field, c.path, obj, indent(enginetest.GoldenText(findings)))
				}
			}
		}
		p.readStored(findings, ov.Name, storedObjs)
	}
}

func impactsText(v finding.VersionImpact) string {
	b, _ := json.Marshal(v.Impacts)
	return string(b)
}

// readStored reads the stored objects of a version with the ObjectReader
// (what a deploy shows of them): every effect it finds must be joined to a
// finding of Compare, none left for existingResources. The objects were
// valid when stored, so an effect joined to no finding is the update's,
// unexplained.
func (p *proofRun) readStored(findings []finding.Finding, version string, objs []map[string]any) {
	cfg := proofPolicy()
	r, err := objects.NewObjectReader(p.old, p.new, version, finding.SourceCluster, findings, &cfg)
	if err != nil {
		p.tb.Fatalf("%s: version %s: %v", p.name, version, err)
	}
	r.Read(objs)
	res := r.Result()
	// The shortcut of a reader whose schemas read stored objects alike
	// (readsDiffer false: objects only validated) finds what the full read
	// finds.
	if r.Shortcut() {
		full, err := objects.NewObjectReader(p.old, p.new, version, finding.SourceCluster, findings, &cfg)
		if err != nil {
			p.tb.Fatalf("%s: version %s: %v", p.name, version, err)
		}
		full.FullRead()
		full.Read(objs)
		if fr := full.Result(); fr.Affected != res.Affected || !reflect.DeepEqual(fr.Impacts, res.Impacts) {
			p.tb.Errorf("%s: version %s: readsDiffer is false, but reading the objects finds %d affected, not %d:\n%s\n%s",
				p.name, version, fr.Affected, res.Affected, impactsText(fr), impactsText(res))
		}
	}
	// The objects were valid under the old CRD: none is noted as already
	// invalid (the old CRD's judgement agrees with the proof's).
	for i, f := range res.Notes {
		if i < p.maxMisses {
			p.tb.Errorf("%s: version %s: an object valid when stored is noted as invalid under the old CRD: %s", p.name, version, enginetest.Message(f))
		}
	}
	for _, f := range res.Residual {
		p.stats.residual++
		if p.stats.residual <= p.maxMisses {
			p.tb.Errorf("%s: version %s: the object reader joined an effect to no finding: %s\n  findings:\n%s",
				p.name, version, enginetest.Message(f), indent(enginetest.GoldenText(findings)))
		}
	}
}

func indent(s string) string {
	if s == "" {
		return "    (none)"
	}
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ")
}

// prove stores raw under the old schema and returns the changes the new
// schema makes to it, and the object as stored; stored is nil when the old
// schema rejects it.
//
// A change is a field the read prunes, nulls or defaults differently, a
// default the same request gets differently, or a validation error. An
// error that the stored data has as it is, validated under the new schema
// before any decoding, is a change at its own field. An error that appears
// only after decoding (an anyOf that required a field the new schema
// prunes) is a consequence of a pruned or defaulted field: that field is
// the change, and it is checked itself.
func (p *proofRun) prove(mo, mn *prooftest.ServedSchema, raw map[string]any) (changes []dataChange, stored map[string]any) {
	raw, err := normalizeJSON(raw)
	if err != nil {
		p.tb.Fatalf("%s: %v", p.name, err)
	}
	s := finding.DeepCopyJSON(raw).(map[string]any)
	if err := mo.Decode(s, false); err != nil || len(mo.Validate(s)) > 0 {
		return nil, nil
	}
	add := func(path dataPath, reason string) {
		changes = append(changes, dataChange{path: path, field: schemaPath(mn.Structural, path),
			oldField: schemaPath(mo.Structural, path), reason: reason})
	}
	transformed := false // decoding under the new schema changed something
	// Read back under the new schema.
	r := finding.DeepCopyJSON(s).(map[string]any)
	if err := mn.Decode(r, true); err != nil {
		add(nil, "read fails: "+err.Error())
	}
	for _, d := range diffJSON(nil, s, r) {
		transformed = true
		if servedStorable(mo, d.path) || d.hadOld {
			add(d.path, "read back as "+d.what)
		}
	}
	// The same request under the new schema: what each schema defaulted
	// must agree.
	c := finding.DeepCopyJSON(raw).(map[string]any)
	cErr := mn.Decode(c, false)
	if cErr != nil {
		add(nil, "create fails: "+cErr.Error())
	} else {
		for _, d := range defaultDiffs(mo, mn, raw, s, c) {
			transformed = true
			if servedStorable(mo, d.path) || d.hadOld {
				add(d.path, "defaulted differently: "+d.what)
			}
		}
	}
	inherent := map[string]bool{}
	for _, e := range mn.Validate(finding.DeepCopyJSON(s).(map[string]any)) {
		inherent[errorKey(e)] = true
	}
	rejected := func(obj map[string]any, how string) {
		for _, e := range mn.Validate(obj) {
			if inherent[errorKey(e)] || !transformed {
				add(errorPath(e, obj), how+": "+e.Error())
			}
		}
	}
	rejected(r, "read back and rejected")
	if cErr == nil {
		rejected(c, "created and rejected")
	}
	return changes, s
}

// errorKey identifies a validation error without the value it quotes.
func errorKey(e *field.Error) string {
	return string(e.Type) + "\x00" + e.Field + "\x00" + e.Detail
}

// defaultDiffs compares the defaults each schema applies to the request
// raw (s and c are raw decoded with the old and the new schema): at every
// path one of them defaulted, the two decoded objects must agree.
func defaultDiffs(mo, mn *prooftest.ServedSchema, raw, s, c map[string]any) []jsonDiff {
	paths := map[string]dataPath{}
	for _, m := range []*prooftest.ServedSchema{mo, mn} {
		undefaulted := finding.DeepCopyJSON(raw).(map[string]any)
		defaulted := finding.DeepCopyJSON(raw).(map[string]any)
		if m.DecodeWithoutDefaults(undefaulted, false) != nil || m.Decode(defaulted, false) != nil {
			continue
		}
		for _, d := range diffJSON(nil, undefaulted, defaulted) {
			paths[d.path.String()] = d.path
		}
	}
	var out []jsonDiff
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := paths[k]
		sv, inS := lookupJSON(s, p)
		cv, inC := lookupJSON(c, p)
		if inS != inC || !reflect.DeepEqual(sv, cv) {
			out = append(out, jsonDiff{p, inS, compactJSON(sv) + " -> " + compactJSON(cv)})
		}
	}
	return out
}

// lookupJSON returns the value at p, and whether there is one.
func lookupJSON(v any, p dataPath) (any, bool) {
	for _, e := range p {
		switch e := e.(type) {
		case int:
			l, ok := v.([]any)
			if !ok || e >= len(l) {
				return nil, false
			}
			v = l[e]
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[e]; !ok {
				return nil, false
			}
		}
	}
	return v, true
}

// jsonDiff is one difference between two JSON values.
type jsonDiff struct {
	path   dataPath
	hadOld bool   // the old value had something at path
	what   string // readable
}

// diffJSON returns the paths where a and b differ, as deep as both are
// objects or equally long lists.
func diffJSON(path dataPath, a, b any) []jsonDiff {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(at)+len(bt))
		for k := range at {
			keys = append(keys, k)
		}
		for k := range bt {
			if _, ok := at[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var out []jsonDiff
		for _, k := range keys {
			av, inA := at[k]
			bv, inB := bt[k]
			child := append(append(dataPath{}, path...), k)
			switch {
			case !inB:
				out = append(out, jsonDiff{child, true, "pruned (was " + compactJSON(av) + ")"})
			case !inA:
				out = append(out, jsonDiff{child, false, "added " + compactJSON(bv)})
			default:
				out = append(out, diffJSON(child, av, bv)...)
			}
		}
		return out
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			break
		}
		var out []jsonDiff
		for i := range at {
			out = append(out, diffJSON(append(append(dataPath{}, path...), i), at[i], bt[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []jsonDiff{{path, true, compactJSON(a) + " -> " + compactJSON(b)}}
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// covered reports whether a finding covers a change at field in version:
// a CRD-level finding, a finding at field or an ancestor (inside a
// combinator branch, the field the branch constrains), or a finding inside
// a combinator of field itself.
func covered(findings []finding.Finding, version, field string) bool {
	for _, f := range findings {
		if f.Version != version && f.Version != "" {
			continue
		}
		if f.Field == "" {
			return true
		}
		base, stripped := enginetest.SplitCombinators(string(f.Field))
		if prooftest.IsAncestorOrSelf(stripped, field) || base == field {
			return true
		}
	}
	return false
}

// proofPolicy is the default policy under failMode open: a change no
// check understands is not reported, so an unhandled finding never covers
// a change (under failMode open it would pass unseen).
func proofPolicy() config.Settings {
	cfg := config.Default()
	cfg.FailMode = config.FailModeOpen
	return cfg
}

func proofCompare(old, new *apiextv1.CustomResourceDefinition) []finding.Finding {
	cfg := proofPolicy()
	return Compare(old, new, &cfg)
}

// TestNoFalseNegativesGolden runs the proof over every golden case, in
// both directions (a downgrade is a change too), with the default policy.
func TestNoFalseNegativesGolden(t *testing.T) {
	var total proofStats
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range prooftest.GoldenCases(t) {
		old := enginetest.ParseCRDStrict(t, c.Dir+"/old.yaml", c.Old)
		new := enginetest.ParseCRDStrict(t, c.Dir+"/new.yaml", c.New)
		for _, dir := range []struct {
			name     string
			old, new *apiextv1.CustomResourceDefinition
		}{{c.Name, old, new}, {c.Name + " (reversed)", new, old}} {
			p := &proofRun{tb: t, name: dir.name, old: dir.old, new: dir.new, r: r, objects: 40, maxMisses: 3}
			p.run()
			total.add(p.stats)
		}
	}
	t.Logf("golden cases: %s", total)
}

// TestProofHarness checks the harness itself: a CRD compared with itself
// changes no stored object (so the apiserver model is consistent), and a
// change the engine is blind to by configuration is caught.
func TestProofHarness(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var total proofStats
	for _, c := range prooftest.GoldenCases(t) {
		crd := enginetest.ParseCRDStrict(t, c.Dir+"/old.yaml", c.Old)
		p := &proofRun{tb: t, name: c.Name + " (itself)", old: crd, new: crd, r: r, objects: 10, maxMisses: 3}
		p.run()
		if p.stats.changed > 0 {
			t.Errorf("%s: comparing with itself changed %d objects", c.Name, p.stats.changed)
		}
		total.add(p.stats)
	}
	if total.stored < total.generated/2 {
		t.Errorf("the generator writes too few valid objects: %s", total)
	}
	t.Logf("self comparisons: %s", total)

	// With a finding removed, the proof must notice.
	c := goldenCaseByName(t, "prohibited-maxlength-decreased")
	old := enginetest.ParseCRDStrict(t, c.Dir+"/old.yaml", c.Old)
	new := enginetest.ParseCRDStrict(t, c.Dir+"/new.yaml", c.New)
	rec := &recordingTB{TB: t}
	p := &proofRun{tb: rec, name: c.Name, old: old, new: new, r: r, objects: 40, maxMisses: 1}
	cfg := proofPolicy()
	cfg.Checks.SameVersion.MaxLength.Enabled = false
	p.compare = func(old, new *apiextv1.CustomResourceDefinition) []finding.Finding { return Compare(old, new, &cfg) }
	p.run()
	if p.stats.misses == 0 || len(rec.errors) == 0 {
		t.Fatalf("with the maxLength check disabled, the proof found no uncovered change: %s", p.stats)
	}
}

// recordingTB records errors instead of failing the test.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func goldenCaseByName(tb testing.TB, name string) prooftest.GoldenCase {
	tb.Helper()
	for _, c := range prooftest.GoldenCases(tb) {
		if c.Name == name {
			return c
		}
	}
	tb.Fatalf("no golden case %s", name)
	return prooftest.GoldenCase{}
}

// TestProofDetectsMissingFindings shows the proof has teeth: for every
// golden case and every check among its findings, the proof run with that
// check's findings left out must find an uncovered change, for every check
// whose effect on stored objects the apiserver can show. The exceptions
// change no stored object by themselves: a version removed (or unserved
// before it was deprecated) is not read back at all, server-side-apply topology is not data, field selectors are
// not data, and the proof reads each version's objects in that same
// version (servedVersion compares versions with each other, storagePruning
// a version with the storage version: TestPrunedFieldsAgreeWithAPIServer
// proves it with the apiserver's pruning).
func TestProofDetectsMissingFindings(t *testing.T) {
	unobservable := map[string]bool{
		config.CheckStoredVersionRemoval: true, config.CheckServedVersionRemoval: true,
		config.CheckMapType: true, config.CheckServedVersion: true, config.CheckSelectableFields: true,
		config.CheckStoragePruning: true, config.CheckVersionLifecycle: true,
	}
	r := rand.New(rand.NewPCG(7, 8))
	caught := map[string]bool{}
	seen := map[string]bool{}
	for _, c := range prooftest.GoldenCases(t) {
		old := enginetest.ParseCRDStrict(t, c.Dir+"/old.yaml", c.Old)
		new := enginetest.ParseCRDStrict(t, c.Dir+"/new.yaml", c.New)
		all := proofCompare(old, new)
		checks := map[string]bool{}
		for _, f := range all {
			checks[f.Check] = true
		}
		for check := range checks {
			seen[check] = true
			if caught[check] {
				continue
			}
			rec := &recordingTB{TB: t}
			p := &proofRun{tb: rec, name: c.Name + " without " + check, old: old, new: new, r: r, objects: 80, maxMisses: 1,
				compare: func(_, _ *apiextv1.CustomResourceDefinition) []finding.Finding {
					var kept []finding.Finding
					for _, f := range all {
						if f.Check != check {
							kept = append(kept, f)
						}
					}
					return append(kept, finding.Finding{Version: "none"}) // never nil: no fallback to Compare
				}}
			p.run()
			if p.stats.misses > 0 {
				caught[check] = true
			}
		}
	}
	for check := range seen {
		if caught[check] == unobservable[check] {
			t.Errorf("check %s: the proof notices its findings missing: %v, want %v", check, caught[check], !unobservable[check])
		}
	}
	var notNoticed []string
	for check := range seen {
		if !caught[check] {
			notNoticed = append(notNoticed, check)
		}
	}
	sort.Strings(notNoticed)
	t.Logf("the proof notices the findings of %d of %d checks missing; not those of %v", len(caught), len(seen), notNoticed)
}
