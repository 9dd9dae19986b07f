package tools

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/stretchr/testify/require"
)

func objectsTD(name string) string { return td("objects/" + name) }

// TestCRDUpgradeSafetyObjects: --objects reads sample custom resources as
// stored objects, offline: every finding says what it does to them, and
// unaffectedEnforcement applies to them.
func TestCRDUpgradeSafetyObjects(t *testing.T) {
	oldCRD, newCRD := ex("crd-upgrade/crd-v2-safe.yaml"), ex("crd-upgrade/crd-v3-unsafe.yaml")
	withObjects := func(paths ...string) func(*CRDUpgradeSafetyOptions) {
		return func(o *CRDUpgradeSafetyOptions) { o.FileFlags.Objects = paths }
	}
	messages := func(resp jsonResp) []string {
		var out []string
		for _, r := range resp.rows(t) {
			out = append(out, r["check"]+" "+r["severity"]+": "+r["message"])
		}
		return out
	}

	cases := []struct {
		name    string
		new     []string
		objects []string
		want    []string // check severity: message, in the order of the table
		lines   []string // among the lines printed
	}{
		{name: "the impact of every finding on the samples",
			new: []string{newCRD}, objects: []string{objectsTD("samples")},
			want: []string{
				`existingFieldRemoval error: data loss: existing field removed (was string): 2 of 3 sample Widgets hold data here, pruned when applied: default/big ("red"), default/tiny ("blue")`,
				`required error: new required fields: ["replicas"]: none of 3 sample Widgets affected`,
				`maximum error: maximum decreased: 20 -> 5: 1 of 3 sample Widgets rejected: default/big (Invalid value: 8: spec.replicas in body should be less than or equal to 5) (refused when applied)`,
				`enum error: enum values removed: ["small"]: 1 of 3 sample Widgets rejected: default/tiny (Unsupported value: "small": supported values: "medium", "large", "xlarge") (refused when applied)`,
			},
			lines: []string{
				"1 CRD checked, 1 unsafe: 4 errors, 0 warnings; 2 sample objects affected",
				"--objects: 1 object of no CRD of the inputs skipped: file '" + objectsTD("samples/other.yaml") + "' doc 1 (v1 ConfigMap)",
			}},
		{name: "unaffectedEnforcement Warn: a finding that affects no sample is a warning",
			new: []string{newCRD, objectsTD("config-unaffected-warn.yaml")}, objects: []string{objectsTD("samples/widgets.yaml")},
			want: []string{
				`existingFieldRemoval error: data loss: existing field removed (was string): 2 of 3 sample Widgets hold data here, pruned when applied: default/big ("red"), default/tiny ("blue")`,
				`required warning: new required fields: ["replicas"]: none of 3 sample Widgets affected; a warning under unaffectedEnforcement Warn: writers that send values the old schema accepted may still be refused`,
				`maximum error: maximum decreased: 20 -> 5: 1 of 3 sample Widgets rejected: default/big (Invalid value: 8: spec.replicas in body should be less than or equal to 5) (refused when applied)`,
				`enum error: enum values removed: ["small"]: 1 of 3 sample Widgets rejected: default/tiny (Unsupported value: "small": supported values: "medium", "large", "xlarge") (refused when applied)`,
			}},
		{name: "unaffectedEnforcement Warn without objects changes nothing, and says so",
			new: []string{newCRD, objectsTD("config-unaffected-warn.yaml")},
			want: []string{
				`existingFieldRemoval error: data loss: existing field removed (was string)`,
				`required error: new required fields: ["replicas"]`,
				`maximum error: maximum decreased: 20 -> 5`,
				`enum error: enum values removed: ["small"]`,
			},
			lines: []string{"unaffectedEnforcement Warn changes nothing here: no objects are read without a cluster or --objects"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := runWith(t, withObjects(tc.objects...), []string{oldCRD}, tc.new, nil)
			requireUnsafe(t, err)
			require.Equal(t, tc.want, messages(resp))
			for _, l := range tc.lines {
				require.Contains(t, resp.Lines, l)
			}
		})
	}

	t.Run("an object without a name is an error naming its file", func(t *testing.T) {
		_, err := runWith(t, withObjects(objectsTD("nameless.yaml")), []string{oldCRD}, []string{newCRD}, nil)
		require.ErrorIs(t, err, inputs.ErrInvalidInput)
		require.ErrorContains(t, err, "--objects: file '"+objectsTD("nameless.yaml")+"' doc 1: invalid input: a custom resource needs metadata.name")
	})
	t.Run("against the cluster, --objects is refused", func(t *testing.T) {
		_, err := runWith(t, withObjects(objectsTD("samples")), nil, []string{newCRD}, &fakeCluster{})
		require.ErrorContains(t, err, "expected --objects with --file or --git-ref")
	})
}
