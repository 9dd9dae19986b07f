package crdupgradesafety

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// fpOld and fpNew are a CRD pair as a file holds it; fpNewReformatted is
// fpNew written another way: keys and properties reordered, another
// quoting style, comments.
var (
	fpOld = testcrd.CRDYAML("widgets", "Widget",
		"{replicas: {type: integer, maximum: 20}, size: {type: string, enum: [small, large]}, color: {type: string}}")
	fpNew = testcrd.CRDYAML("widgets", "Widget", "{replicas: {type: integer, maximum: 5}, size: {type: string, enum: [large]}}")
)

const fpNewReformatted = `# the same CRD, written by another generator
kind: "CustomResourceDefinition"
apiVersion: "apiextensions.k8s.io/v1"
spec:
  versions:
    - schema:
        openAPIV3Schema:
          properties:
            spec:
              properties:
                size:
                  enum: ["large"] # small is gone
                  type: "string"
                replicas:
                  maximum: 5
                  type: "integer"
              type: "object"
          type: "object"
      storage: true
      served: true
      name: "v1"
  names:
    listKind: WidgetList
    kind: Widget
    singular: widget
    plural: widgets
  scope: "Namespaced"
  group: "example.com"
metadata:
  name: "widgets.example.com"
`

func parseFP(t *testing.T, s string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(s), &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

// fingerprints maps "check field" to the fingerprint of each finding.
func fingerprints(fs []finding.Finding) map[string]string {
	out := map[string]string{}
	for _, f := range fs {
		out[f.Check+" "+string(f.Field)] = f.Fingerprint
	}
	return out
}

// TestFingerprintStable: a fingerprint is a hash of facts. Reformatting
// the CRD (keys reordered, comments, quoting) and rewording every message
// (another renderer) leave it as it is; another change (maximum 20 -> 3
// instead of 20 -> 5) gets another. The fingerprints are pinned, so that a
// change of what they hash does not go unnoticed. (File names, moves and
// other CRDs in the inputs: TestCRDUpgradeSafetyFingerprintStable in
// pkg/kapp/cmd/tools.)
func TestFingerprintStable(t *testing.T) {
	old := parseFP(t, fpOld)
	base := Compare(old, parseFP(t, fpNew), nil)
	want := map[string]string{
		"existingFieldRemoval ^.spec.color": "1869f7b84f86",
		"maximum ^.spec.replicas":           "113bd849ceca",
		"enum ^.spec.size":                  "00bc713c27ba",
	}
	got := fingerprints(base)
	if len(got) != len(want) {
		t.Fatalf("findings: %v", enginetest.Render(base))
	}
	for k, fp := range want {
		if got[k] != fp {
			t.Errorf("%s: fingerprint %q, pinned %q", k, got[k], fp)
		}
	}

	if re := fingerprints(Compare(old, parseFP(t, fpNewReformatted), nil)); !maps.Equal(re, got) {
		t.Errorf("reformatted: %v, want %v", re, got)
	}

	before := enginetest.Render(base)
	defer func(m func(finding.Finding) string) { enginetest.RenderMessage = m }(enginetest.RenderMessage)
	enginetest.RenderMessage = func(f finding.Finding) string { return strings.ToUpper(f.Check) + " IS UNHAPPY" }
	reworded := Compare(old, parseFP(t, fpNew), nil)
	if enginetest.Render(reworded)[0] == before[0] {
		t.Fatal("the renderer was not swapped")
	}
	if fps := fingerprints(reworded); !maps.Equal(fps, got) {
		t.Errorf("reworded: %v, want %v", fps, got)
	}

	other := Compare(old, parseFP(t, strings.Replace(fpNew, "maximum: 5", "maximum: 3", 1)), nil)
	fps := fingerprints(other)
	if fps["maximum ^.spec.replicas"] == got["maximum ^.spec.replicas"] {
		t.Errorf("maximum 20 -> 3 has the fingerprint of 20 -> 5: %s", fps["maximum ^.spec.replicas"])
	}
	if fps["enum ^.spec.size"] != got["enum ^.spec.size"] {
		t.Errorf("the enum change is the same, its fingerprint is not: %s, %s", fps["enum ^.spec.size"], got["enum ^.spec.size"])
	}
}

// TestWaiversInPolicy: a waiver by fingerprint or by path pattern waives
// what it names and nothing else; an expired one waives nothing and the
// finding says so; an expiry lasts to the end of its day (UTC).
func TestWaiversInPolicy(t *testing.T) {
	old, new := parseFP(t, fpOld), parseFP(t, fpNew)
	fp := fingerprints(Compare(old, new, nil))["maximum ^.spec.replicas"]
	day := func(s string) time.Time {
		d, err := time.Parse(config.DateFormat, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		waiver config.Waiver
		want   []string
	}{
		{"by fingerprint", config.Waiver{Fingerprint: fp, Reason: "load test only", Owner: "team-widgets", Expires: day("2026-11-26"), Source: config.SourceSettings}, []string{
			"error existingFieldRemoval v1 ^.spec.color: data loss: existing field removed (was string)",
			"warning maximum v1 ^.spec.replicas: maximum decreased: 20 -> 5 (exempted: load test only; owner team-widgets; until 2026-11-26)",
			`error enum v1 ^.spec.size: enum values removed: ["small"]`,
		}},
		{"by path pattern", config.Waiver{CRD: enginetest.TestCRDName, Path: "^.spec.s*", Reason: "sizes renamed", Source: config.SourceAnnotation}, []string{
			"error existingFieldRemoval v1 ^.spec.color: data loss: existing field removed (was string)",
			"error maximum v1 ^.spec.replicas: maximum decreased: 20 -> 5",
			`warning enum v1 ^.spec.size: enum values removed: ["small"] (exempted: waive annotation: sizes renamed)`,
		}},
		{"expired", config.Waiver{Fingerprint: fp, Reason: "load test only", Owner: "team-widgets", Expires: day("2026-11-25")}, []string{
			"error existingFieldRemoval v1 ^.spec.color: data loss: existing field removed (was string)",
			"error maximum v1 ^.spec.replicas: maximum decreased: 20 -> 5 (not exempted: the waiver expired at the end of 2026-11-25 UTC; it read: load test only; owner team-widgets)",
			`error enum v1 ^.spec.size: enum values removed: ["small"]`,
		}},
		{"the fingerprint of another change", config.Waiver{Fingerprint: "0123456789ab", Reason: "r"}, []string{
			"error existingFieldRemoval v1 ^.spec.color: data loss: existing field removed (was string)",
			"error maximum v1 ^.spec.replicas: maximum decreased: 20 -> 5",
			`error enum v1 ^.spec.size: enum values removed: ["small"]`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Now = now
			cfg.Waivers = []config.Waiver{tc.waiver}
			fs := Compare(old, new, &cfg)
			if got := enginetest.Render(fs); !enginetest.EqualLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			if got := fingerprints(fs)["maximum ^.spec.replicas"]; got != fp {
				t.Errorf("a waiver changed the fingerprint: %s, want %s", got, fp)
			}
		})
	}
}

// TestStaleWaivers: a waiver of an evaluated CRD that matches none of its
// findings is a staleWaiver warning; one of a CRD not evaluated, one by
// fingerprint alone, and one matched only after its expiry are not.
func TestStaleWaivers(t *testing.T) {
	old, new := parseFP(t, fpOld), parseFP(t, fpNew)
	cfg := config.Default()
	cfg.Now = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	cfg.Waivers = []config.Waiver{
		{CRD: enginetest.TestCRDName, Checks: []string{config.CheckEnum}, Reason: "in use"},
		{CRD: enginetest.TestCRDName, Checks: []string{config.CheckType}, Reason: "gone", Owner: "team-widgets"},
		{CRD: "gadgets.example.com", Reason: "not in this run"},
		{Fingerprint: "0123456789ab", Reason: "which CRD?"},
		{Fingerprint: "0123456789ab", CRD: enginetest.TestCRDName, Reason: "stale by fingerprint"},
		{CRD: enginetest.TestCRDName, Path: "^.spec.replicas", Reason: "expired", Expires: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	fs := Compare(old, new, &cfg)
	stale := finding.StaleWaivers(&cfg, []string{enginetest.TestCRDName}, fs)
	want := []string{
		"warning staleWaiver  : stale waiver: it matches no finding of this CRD (checks type), gone; owner team-widgets",
		"warning staleWaiver  : stale waiver: it matches no finding of this CRD (fingerprint 0123456789ab), stale by fingerprint",
	}
	if got := enginetest.Render(stale); !enginetest.EqualLines(got, want) {
		t.Fatalf("stale waivers differ\n got: %q\nwant: %q", got, want)
	}
	for _, f := range stale {
		if f.Remedy == nil || f.Remedy.Action != finding.RemedyRemoveWaiver || len(f.Fingerprint) != config.FingerprintLen || f.CRD != enginetest.TestCRDName {
			t.Errorf("stale finding %+v", f)
		}
	}
	if got := finding.StaleWaivers(&cfg, nil, fs); len(got) != 0 {
		t.Errorf("no CRD evaluated, nothing judged: %q", enginetest.Render(got))
	}
}

// TestFingerprintsOfLikeFindings: two findings whose facts are all alike
// (one CEL rule added twice) still get fingerprints of their own.
func TestFingerprintsOfLikeFindings(t *testing.T) {
	old := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string}}}`})
	new := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string}}, x-kubernetes-validations: [{rule: "self.a != 'x'", message: one}, {rule: "self.a != 'x'", message: two}]}`})
	fs := Compare(old, new, nil)
	if len(fs) != 2 || fs[0].Fingerprint == fs[1].Fingerprint {
		t.Fatalf("want two findings with fingerprints of their own, got %q %v", enginetest.Render(fs), fingerprints(fs))
	}
}

// TestFingerprintOfReorderedEnum: reordering the values of the enums (a
// set) changes no fingerprint of the removal.
func TestFingerprintOfReorderedEnum(t *testing.T) {
	old := parseFP(t, fpOld)
	reordered := parseFP(t, strings.Replace(fpOld, "enum: [small, large]", "enum: [large, small]", 1))
	a := fingerprints(Compare(old, parseFP(t, strings.Replace(fpNew, "enum: [large]", "enum: [medium]", 1)), nil))["enum ^.spec.size"]
	b := fingerprints(Compare(reordered, parseFP(t, strings.Replace(fpNew, "enum: [large]", "enum: [medium]", 1)), nil))["enum ^.spec.size"]
	if a == "" || a != b {
		t.Errorf("enum values removed [small, large] and [large, small]: fingerprints %q and %q", a, b)
	}
}
