package crdupgradesafety

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// updateGolden rewrites testdata/<case>/expected.txt with what Compare
// returns: go test ./pkg/kapp/crdupgradesafety/ -run Golden -update
// Read every rewritten file before committing it: a golden file records
// what docs/checks.md says, not whatever the engine happens to do.
var updateGolden = flag.Bool("update", false, "rewrite testdata/*/expected.txt with the current findings")

// caseConfig decodes config.yaml with config.Decode; no file means the
// default policy.
func caseConfig(tb testing.TB, c prooftest.GoldenCase) *config.Settings {
	tb.Helper()
	if c.Config == nil {
		def := config.Default()
		return &def
	}
	var raw map[string]any
	if err := yaml.Unmarshal(c.Config, &raw); err != nil {
		tb.Fatalf("parsing %s/config.yaml: %v", c.Dir, err)
	}
	cfg, err := config.Decode(raw)
	if err != nil {
		tb.Fatalf("decoding %s/config.yaml: %v", c.Dir, err)
	}
	return &cfg
}

// TestGolden runs every testdata case through Compare and compares the
// findings with expected.txt. It also checks the invariants every case
// must hold: findings are sorted and name the new CRD, and comparing
// either file with itself finds nothing.
func TestGolden(t *testing.T) {
	for _, c := range prooftest.GoldenCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			old := enginetest.ParseCRDStrict(t, filepath.Join(c.Dir, "old.yaml"), c.Old)
			new := enginetest.ParseCRDStrict(t, filepath.Join(c.Dir, "new.yaml"), c.New)
			cfg := caseConfig(t, c)

			got := Compare(old, new, cfg)
			checkFindingInvariants(t, new.Name, got)

			for _, self := range []struct {
				file string
				crd  *apiextv1.CustomResourceDefinition
			}{{"old.yaml", old}, {"new.yaml", new}} {
				if fs := Compare(self.crd, self.crd, cfg); len(fs) > 0 {
					t.Errorf("comparing %s with itself: want no findings, got:\n%s", self.file, enginetest.GoldenText(fs))
				}
			}

			expectedPath := filepath.Join(c.Dir, "expected.txt")
			gotText := enginetest.GoldenText(got)
			if *updateGolden {
				if err := os.WriteFile(expectedPath, []byte(gotText), 0o644); err != nil {
					t.Fatalf("writing %s: %v", expectedPath, err)
				}
				return
			}
			want, err := os.ReadFile(expectedPath)
			if err != nil {
				t.Fatalf("reading %s (run with -update to create it): %v", expectedPath, err)
			}
			if !bytes.Equal(want, []byte(gotText)) {
				t.Errorf("findings differ from %s\n--- want\n%s--- got\n%s", expectedPath, want, gotText)
			}
		})
	}
}

// checkFindingInvariants holds for every Compare result: each finding names
// the CRD, a known check and a message, carries a severity, and the list is
// sorted by CRD, version, field, check and message.
func checkFindingInvariants(tb testing.TB, crdName string, fs []finding.Finding) {
	tb.Helper()
	for i, f := range fs {
		if f.CRD != crdName {
			tb.Errorf("finding %d: CRD %q, want %q", i, f.CRD, crdName)
		}
		if f.CRD == "" || f.Check == "" || f.ChangeText == "" && f.Object == nil {
			tb.Errorf("finding %d has an empty CRD, check or message: %+v", i, f)
		}
		if !knownCheckIDs[f.Check] {
			tb.Errorf("finding %d: unknown check ID %q", i, f.Check)
		}
		if f.Severity != finding.SeverityError && f.Severity != finding.SeverityWarning {
			tb.Errorf("finding %d: unknown severity %q", i, f.Severity)
		}
		if len(f.Fingerprint) != config.FingerprintLen {
			tb.Errorf("finding %d: fingerprint %q", i, f.Fingerprint)
		}
		for _, g := range fs[:i] {
			if g.Fingerprint == f.Fingerprint {
				tb.Errorf("findings %s and %s share a fingerprint: give them a fact (Change) that tells them apart", enginetest.GoldenLine(g), enginetest.GoldenLine(f))
			}
		}
		if i > 0 && findingLess(f, fs[i-1]) {
			tb.Errorf("findings not sorted: %d (%s) before %d (%s)", i-1, enginetest.GoldenLine(fs[i-1]), i, enginetest.GoldenLine(f))
		}
	}
}

// knownCheckIDs are the check IDs Compare may report.
var knownCheckIDs = func() map[string]bool {
	m := map[string]bool{config.CheckServedVersion: true, config.CheckUnhandled: true}
	for _, id := range config.CRDCheckIDs {
		m[id] = true
	}
	for _, id := range config.PropertyCheckIDs {
		m[id] = true
	}
	return m
}()

// findingLess is the documented order of findings, written out here rather
// than borrowed from the engine so that the tests check it independently.
func findingLess(a, b finding.Finding) bool {
	if a.DataLoss != b.DataLoss {
		return a.DataLoss // data loss first
	}
	ka := [...]string{a.CRD, a.Version, a.PairVersion, string(a.Field), a.CRDField, a.Check, a.ChangeText}
	kb := [...]string{b.CRD, b.Version, b.PairVersion, string(b.Field), b.CRDField, b.Check, b.ChangeText}
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return false
}

// TestGoldenCRDsAreValid makes sure every case file is a CRD the apiserver
// could accept: its name is <plural>.<group>, exactly one version is the
// storage version, and every version's schema is structural. No case
// should test a change nobody could make.
func TestGoldenCRDsAreValid(t *testing.T) {
	for _, c := range prooftest.GoldenCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			for _, file := range []string{"old.yaml", "new.yaml"} {
				b := c.Old
				if file == "new.yaml" {
					b = c.New
				}
				path := filepath.Join(c.Dir, file)
				if errs := validateCRD(t, enginetest.ParseCRDStrict(t, path, b)); len(errs) > 0 {
					t.Errorf("%s is not a valid CRD:\n  %s", path, strings.Join(errs, "\n  "))
				}
			}
		})
	}
}

// validateCRD checks what the apiserver checks of a CRD that matters here
// (the full create validation would pull in most of the apiserver).
func validateCRD(tb testing.TB, crd *apiextv1.CustomResourceDefinition) []string {
	tb.Helper()
	var errs []string
	if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
		errs = append(errs, "metadata.name: must be spec.names.plural+\".\"+spec.group: "+want)
	}
	storage := 0
	for i, v := range crd.Spec.Versions {
		if v.Storage {
			storage++
		}
		fld := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, fld.String()+": required")
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			tb.Fatalf("converting %s: %v", fld, err)
		}
		s, err := schema.NewStructural(&internal)
		if err != nil {
			errs = append(errs, fld.String()+": "+err.Error())
			continue
		}
		for _, e := range schema.ValidateStructural(fld, s) {
			errs = append(errs, e.Error())
		}
	}
	if storage != 1 {
		errs = append(errs, "spec.versions: exactly one version must be the storage version")
	}
	return errs
}
