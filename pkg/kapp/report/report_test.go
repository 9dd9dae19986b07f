package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/docs"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// celRule is a CEL rule of 800 characters, as real operators ship them.
var celRule = "self.spec.replicas <= 10 || (has(self.spec.override) && self.spec.override.reason != '') && " +
	strings.Repeat("self.spec.tiers.all(t, t.weight >= 0 && t.weight <= 100) && ", 12)[:712]

// fixture is a run over four CRDs: an unsafe one (a removed field, a
// tightened bound, a long CEL rule with characters every format must
// escape, an apiserverRejects finding with the apiserver's field path),
// one with only warnings, one without findings, and one the new inputs
// dropped, whose only location is in the old inputs at a git revision.
// maxFindingsPerCRD is 4, so one finding of the unsafe CRD is left out.
func fixture() Report {
	findings := []finding.Finding{
		{CRD: "widgets.example.com", Version: "v1", Field: "^.spec.color", Check: "existingFieldRemoval",
			Severity: "error", ChangeText: "existing field removed (was string)"},
		{CRD: "widgets.example.com", Version: "v1", Field: "^.spec.replicas", Check: "maximum",
			Severity: "error", ChangeText: "maximum decreased: 20 -> 5",
			ExpiredWaiver: &config.Waiver{CRD: "widgets.example.com", Checks: []string{"maximum"}, Reason: "load test only",
				Owner: "team-widgets", Expires: time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), Source: config.SourceSettings}},
		{CRD: "widgets.example.com", Version: "v1", Field: "^.spec", Check: "celValidation",
			Severity: "error", ChangeText: "rule added: " + celRule + "\n100% sure: a, b | c <ok> *x* _y_ [z] `q`"},
		{CRD: "widgets.example.com", CRDField: "spec.versions[0].name", Check: "apiserverRejects",
			Severity: "error", ChangeText: `the apiserver refuses the update: Invalid value: "v1!": a DNS-1035 label`},
		{CRD: "widgets.example.com", Version: "v1", Field: "^.spec.size", Check: "enum",
			Severity: "error", ChangeText: `enum values removed: ["small"]`},
		{CRD: "gadgets.example.com", Version: "v1beta1", Field: "^.spec.refs[*]", Check: "mapType",
			Severity: "warning", ChangeText: "map type changed: granular -> atomic",
			Waiver: &config.Waiver{CRD: "gadgets.example.com", Reason: "clients use server-side apply of whole lists",
				Owner: "team-gadgets", Expires: time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC), Source: config.SourceAnnotation}},
		{CRD: "sprockets.example.com", Check: "crdDeletion", Severity: "error",
			ChangeText: "missing from the new inputs: kapp would delete the CRD with all its custom resources"},
	}
	for i := range findings {
		// Fingerprints as the engine makes them: 12 hex digits.
		findings[i].Fingerprint = fmt.Sprintf("%012x", sha256.Sum256([]byte(strconv.Itoa(i))))[:12]
	}
	finding.SortFindings(findings)
	locations := map[string][2]Location{
		"^.spec.color":          {{File: "config/crds/widgets.yaml", Line: 14}, {File: "config/crds/widgets.yaml", Line: 17, Rev: "origin/main"}},
		"^.spec.replicas":       {{File: "config/crds/widgets.yaml", Line: 21}},
		"^.spec":                {{File: "config/crds/widgets.yaml", Line: 13}},
		"spec.versions[0].name": {{File: "config/crds/widgets.yaml", Line: 9}},
		"^.spec.refs[*]":        {{File: "config/crds/with space/gadgets.yaml", Line: 30}},
		"":                      {{}, {File: "config/crds/sprockets.yaml", Line: 1, Rev: "origin/main"}},
	}
	checked := []string{"widgets.example.com", "gadgets.example.com", "bolts.example.com", "sprockets.example.com"}
	return New(checked, findings, 4, func(f finding.Finding) (Location, Location) {
		l := locations[FieldText(f)]
		return l[0], l[1]
	})
}

func TestNew(t *testing.T) {
	r := fixture()
	require.False(t, r.Safe)
	var names []string
	for _, c := range r.CRDs {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"bolts.example.com", "gadgets.example.com", "sprockets.example.com", "widgets.example.com"}, names)
	require.True(t, r.CRDs[0].Safe)
	require.NotNil(t, r.CRDs[0].Findings, "an empty list, not null, in JSON")
	require.True(t, r.CRDs[1].Safe, "warnings only")
	require.False(t, r.CRDs[3].Safe)
	require.Len(t, r.CRDs[3].Findings, 4)
	require.Equal(t, 1, r.CRDs[3].Omitted)
	unsafe, errs, warns := r.Counts()
	require.Equal(t, [3]int{2, 6, 1}, [3]int{unsafe, errs, warns}, "counts include the omitted finding")

	color := r.CRDs[3].Findings[2]
	require.Len(t, color.Fingerprint, config.FingerprintLen)
	require.Equal(t, "^.spec.color", color.Field)
	require.Equal(t, Finding{CRD: "widgets.example.com", Version: "v1", Field: "^.spec.color", Check: "existingFieldRemoval",
		Severity: "error", Message: "existing field removed (was string)", Fingerprint: color.Fingerprint, File: "config/crds/widgets.yaml", Line: 14,
		OldFile: "config/crds/widgets.yaml", OldLine: 17, OldRevision: "origin/main"}, color)

	// maxFindingsPerCRD keeps the findings that affect stored objects
	// before those that affect none, in the output order.
	t.Run("bounded: what affects stored objects is kept", func(t *testing.T) {
		imp := func(affected int) *finding.Impact {
			return &finding.Impact{Source: "cluster", Kind: "Widget", Objects: 2, Affected: affected, VersionAffected: 1}
		}
		findings := []finding.Finding{
			{CRD: "a.example.com", Version: "v1", Field: "^.spec.a", Check: "maximum", Severity: "error", ChangeText: "a", Impact: imp(0)},
			{CRD: "a.example.com", Version: "v1", Field: "^.spec.b", Check: "maximum", Severity: "error", ChangeText: "b", Impact: imp(0)},
			{CRD: "a.example.com", Version: "v1", Field: "^.spec.c", Check: "maximum", Severity: "error", ChangeText: "c", Impact: imp(1)},
		}
		r := New([]string{"a.example.com"}, findings, 2, nil)
		require.Len(t, r.CRDs[0].Findings, 2)
		require.Equal(t, []string{"^.spec.a", "^.spec.c"}, []string{r.CRDs[0].Findings[0].Field, r.CRDs[0].Findings[1].Field})
		require.Equal(t, 1, r.CRDs[0].Omitted)
	})
	t.Run("without locations", func(t *testing.T) {
		r := New([]string{"a.example.com"}, []finding.Finding{{CRD: "a.example.com", Check: "scope", Severity: "error", ChangeText: "m"}}, 0, nil)
		require.Equal(t, "", r.CRDs[0].Findings[0].File)
		require.Equal(t, 0, r.CRDs[0].Findings[0].Line)
	})
}

func TestSummary(t *testing.T) {
	f := func(crd string, sev finding.Severity) finding.Finding {
		return finding.Finding{CRD: crd, Check: "scope", Severity: sev, ChangeText: "m"}
	}
	cases := []struct {
		checked  []string
		findings []finding.Finding
		want     string
	}{
		{[]string{"a"}, nil, "1 CRD checked: no unsafe changes"},
		{[]string{"a", "b", "c"}, nil, "3 CRDs checked: no unsafe changes"},
		{[]string{"a", "b"}, []finding.Finding{f("a", "warning"), f("b", "warning")}, "2 CRDs checked, none unsafe: 0 errors, 2 warnings"},
		{[]string{"a", "b", "c"}, []finding.Finding{f("a", "error"), f("a", "error"), f("b", "warning")}, "3 CRDs checked, 1 unsafe: 2 errors, 1 warning"},
		{[]string{"a", "b"}, []finding.Finding{f("a", "error"), f("b", "error")}, "2 CRDs checked, 2 unsafe: 2 errors, 0 warnings"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, New(tc.checked, tc.findings, 0, nil).Summary())
	}
	require.Equal(t, "4 CRDs checked, 2 unsafe: 6 errors, 1 warning", fixture().Summary())
}

// TestFormats compares every format's rendering of the fixture with its
// golden file (go test ./pkg/kapp/report/ -update rewrites them).
func TestFormats(t *testing.T) {
	r := fixture()
	sarif, err := SARIF(r)
	require.NoError(t, err)
	js, err := JSON(r)
	require.NoError(t, err)
	outputs := map[string][]byte{
		"markdown.md": []byte(Markdown(r)),
		"github.txt":  []byte(GitHub(r)),
		"sarif.json":  sarif,
		"report.json": js,
	}
	for name, got := range outputs {
		t.Run(name, func(t *testing.T) { golden(t, filepath.Join("testdata", name), got) })
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write it")
	require.Equal(t, string(want), string(got))
}

// TestFormatsKeepFullMessages: only the table shortens long messages.
func TestFormatsKeepFullMessages(t *testing.T) {
	r := fixture()
	sarif, err := SARIF(r)
	require.NoError(t, err)
	js, err := JSON(r)
	require.NoError(t, err)

	var doc Report
	require.NoError(t, json.Unmarshal(js, &doc))
	require.Contains(t, doc.CRDs[3].Findings[1].Message, celRule)
	var log sarifLog
	require.NoError(t, json.Unmarshal(sarif, &log))
	require.Contains(t, log.Runs[0].Results[3].Message.Text, celRule)
	require.Contains(t, GitHub(r), escapeData(celRule))
	require.Contains(t, Markdown(r), mdText(celRule))
}

func TestGitHubEscaping(t *testing.T) {
	require.Equal(t, "100%25 a%0D%0Ab: c, d", escapeData("100% a\r\nb: c, d"))
	require.Equal(t, "100%25 a%0D%0Ab%3A c%2C d", escapeProperty("100% a\r\nb: c, d"))

	out := GitHub(fixture())
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// One line per kept finding, one notice, the summary: a message never
	// breaks a workflow command over two lines.
	require.Len(t, lines, 6+1+1)
	require.True(t, strings.HasPrefix(lines[0], "::warning file=config/crds/with space/gadgets.yaml,line=30,title=mapType in gadgets.example.com::"), lines[0])
	require.True(t, strings.HasPrefix(lines[1], "::error title=crdDeletion in sprockets.example.com::"), "no file at a git revision: %s", lines[1])
	require.Equal(t, "4 CRDs checked, 2 unsafe: 6 errors, 1 warning", lines[7])
}

func TestMarkdownEscaping(t *testing.T) {
	require.Equal(t, `a \| b \<x> \*y\* \_z\_ \[l\] \&<br>n`, mdText("a | b <x> *y* _z_ [l] &\nn"))
	require.Equal(t, "`^.spec.a\\|b`", mdCode("^.spec.a|b"))
	require.Equal(t, "`` a`b ``", mdCode("a`b"))
	require.Equal(t, "", mdCode(""))

	md := Markdown(fixture())
	// Every table row has its six cells: nothing in a message split one.
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") {
			cells := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|")
			require.Equal(t, 7, cells, l)
		}
	}
	require.Contains(t, md, "- `bolts.example.com`")
}

// TestSARIFSchema validates the SARIF output against the SARIF 2.1.0 JSON
// schema (testdata/sarif-schema-2.1.0.json, OASIS errata 01), and checks
// what code scanning reads: a rule per check ID with its docs, and per
// finding its rule, level and location.
func TestSARIFSchema(t *testing.T) {
	out, err := SARIF(fixture())
	require.NoError(t, err)
	validate(t, filepath.Join("testdata", "sarif-schema-2.1.0.json"), "", out)
	bad := strings.Replace(string(out), `"level": "warning"`, `"level": "fatal"`, 1)
	require.Error(t, validateErr(t, filepath.Join("testdata", "sarif-schema-2.1.0.json"), "", []byte(bad)), "the schema is enforced")

	var log sarifLog
	require.NoError(t, json.Unmarshal(out, &log))
	run := log.Runs[0]
	require.Len(t, run.Tool.Driver.Rules, len(config.AllCheckIDs()))
	for i, rule := range run.Tool.Driver.Rules {
		require.Equal(t, config.AllCheckIDs()[i], rule.ID)
		require.NotNil(t, rule.Help, rule.ID)
		require.Contains(t, rule.HelpURI, ChecksDocURL+"#")
	}
	require.Len(t, run.Results, 6)
	for _, res := range run.Results {
		require.Equal(t, res.RuleID, run.Tool.Driver.Rules[*res.RuleIndex].ID)
	}
	color := run.Results[4]
	require.Equal(t, "existingFieldRemoval", color.RuleID)
	require.Equal(t, "error", color.Level)
	require.Equal(t, "config/crds/widgets.yaml", color.Locations[0].PhysicalLocation.ArtifactLocation.URI)
	require.Equal(t, 14, color.Locations[0].PhysicalLocation.Region.StartLine)
	require.Equal(t, 17, color.RelatedLocations[0].PhysicalLocation.Region.StartLine)
	gadget := run.Results[0]
	require.Equal(t, "warning", gadget.Level)
	require.Equal(t, "config/crds/with%20space/gadgets.yaml", gadget.Locations[0].PhysicalLocation.ArtifactLocation.URI)
	require.Len(t, run.Invocations[0].ToolExecutionNotifications, 1, "the omitted finding")

	t.Run("no findings", func(t *testing.T) {
		out, err := SARIF(New([]string{"a.example.com"}, nil, 0, nil))
		require.NoError(t, err)
		validate(t, filepath.Join("testdata", "sarif-schema-2.1.0.json"), "", out)
		require.Contains(t, string(out), `"results": []`, "code scanning requires the results array")
	})
}

// TestJSONSchema validates the json output against the committed schema
// (docs/crd-upgrade-safety-report.schema.json), and decodes it strictly
// both ways: the schema and the Go type describe the same document.
func TestJSONSchema(t *testing.T) {
	out, err := JSON(fixture())
	require.NoError(t, err)
	validate(t, "", docs.ReportSchema, out)

	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var r Report
	require.NoError(t, dec.Decode(&r))
	again, err := JSON(r)
	require.NoError(t, err)
	require.JSONEq(t, string(out), string(again))

	t.Run("the schema rejects what the type does not write", func(t *testing.T) {
		for _, bad := range []string{
			`{"safe": true}`,
			`{"safe": true, "crds": [], "extra": 1}`,
			`{"safe": true, "crds": [{"name": "a", "safe": true, "findings": [], "omitted": 0, "extra": 1}]}`,
			`{"safe": false, "crds": [{"name": "a", "safe": false, "omitted": 0, "findings": [{"crd": "a", "version": "", "field": "", "check": "scope", "severity": "fatal", "message": "m", "file": "", "line": 0}]}]}`,
		} {
			require.Error(t, validateErr(t, "", docs.ReportSchema, []byte(bad)), bad)
		}
	})
}

func validate(t *testing.T, schemaFile, schemaText string, doc []byte) {
	t.Helper()
	require.NoError(t, validateErr(t, schemaFile, schemaText, doc))
}

func validateErr(t *testing.T, schemaFile, schemaText string, doc []byte) error {
	t.Helper()
	if schemaFile != "" {
		raw, err := os.ReadFile(schemaFile)
		require.NoError(t, err)
		schemaText = string(raw)
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(strings.NewReader(schemaText))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", schemaDoc))
	sch, err := c.Compile("schema.json")
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	require.NoError(t, err)
	return sch.Validate(inst)
}

func TestHelpCoversEveryCheck(t *testing.T) {
	for _, id := range config.AllCheckIDs() {
		h, ok := HelpFor(id)
		require.True(t, ok, "docs/checks.md has no section for check %s", id)
		require.NotEmpty(t, h.Short, id)
		require.NotEmpty(t, h.Markdown, id)
		require.Contains(t, docs.Checks, "#"+" "+h.Heading, id)
	}
	h, _ := HelpFor("maxLength")
	require.Equal(t, ChecksDocURL+"#maximum-maxlength-maxitems-maxproperties", h.URL)
	require.Equal(t, "An upper bound is added where none was, or decreased.", h.Short)
	require.Contains(t, h.Markdown, "decreaseEnforcement")
	require.NotContains(t, h.Markdown, "exclusiveMinimum", "a section ends at the next heading")
	h, _ = HelpFor("existingResources")
	require.Equal(t, ChecksDocURL+"#existingresources-live", h.URL)
	_, ok := HelpFor("Property")
	require.False(t, ok)
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"scope":                           "scope",
		"existingResources (live)":        "existingresources-live",
		"allOf, anyOf, oneOf, not":        "allof-anyof-oneof-not",
		"CRD-level checks (`checks.crd`)": "crd-level-checks-checkscrd",
	} {
		require.Equal(t, want, anchor(heading), heading)
	}
}

func TestBaselineText(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		b    finding.Baseline
		want string
	}{
		{finding.Baseline{Ref: "v1.2.0", Commit: commit}, "v1.2.0 (0123456)"},
		{finding.Baseline{Ref: "origin/main", Commit: commit, MergeBase: true}, "origin/main (merge base 0123456)"},
		{finding.Baseline{Ref: "FEDCBA9876543210", Commit: commit, MergeBase: true}, "fedcba9 (merge base 0123456)"},
		{finding.Baseline{Ref: commit, Commit: commit}, "0123456"},
		{finding.Baseline{Ref: "cafe", Commit: commit}, "cafe (0123456)"},
	} {
		require.Equal(t, tc.want, BaselineText(tc.b))
	}
	require.Equal(t, "a (0123456), b (0123456) and c (0123456)", baselinesText([]finding.Baseline{
		{Ref: "a", Commit: commit}, {Ref: "b", Commit: commit}, {Ref: "c", Commit: commit}}))
}
