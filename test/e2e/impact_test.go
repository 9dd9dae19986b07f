package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// impactCase deploys an update of a CRD whose custom resources exist and
// checks what the findings say about them: the objects they affect, how,
// by name and value.
type impactCase struct {
	name string
	// crd and crs are the templates deployed and created first (default
	// base/crd.yaml and base/crs.yaml); newCRD is the update.
	crd, crs, newCRD string
	config           string // template under testdata/configs, "" for none
	blocked          bool
	// findings: per finding, the check ID and the strings its output line
	// holds (__KIND__ is the test's kind).
	findings [][]string
	// absent: strings the output must not hold.
	absent []string
}

func runImpactCases(t *testing.T, cases []impactCase) {
	e := setup(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := newNames(t)
			crd, crs := c.crd, c.crs
			if crd == "" {
				crd, crs = "base/crd.yaml", "base/crs.yaml"
			}
			before := e.appWithCRs(t, n, crd, crs)

			files := map[string][]byte{"crd.yaml": n.render(t, c.newCRD), "marker.yaml": n.marker()}
			dirs := []string{dir(t, files)}
			if c.config != "" {
				dirs = append(dirs, dir(t, map[string][]byte{"config.yaml": n.render(t, "configs/"+c.config)}))
			}
			r := e.deploy(t, n.App, dirs, preflightFlag)
			if c.blocked {
				require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail:\n%s", r.out)
				e.requireUnchanged(t, n, before)
			} else {
				require.Equalf(t, 0, r.exitCode, "kapp was expected to succeed:\n%s", r.out)
			}
			for _, f := range c.findings {
				tokens := make([]string, 0, len(f))
				for _, tok := range f[1:] {
					tokens = append(tokens, strings.ReplaceAll(tok, "__KIND__", n.Kind))
				}
				requireFinding(t, r.out, f[0], append([]string{n.CRD}, tokens...)...)
			}
			for _, s := range c.absent {
				require.NotContains(t, r.out, strings.ReplaceAll(s, "__KIND__", n.Kind))
			}
		})
	}
}

// TestImpactOnStoredObjects: a blocked deploy says, for each finding, which
// of the stored custom resources it affects and how (issue 24): data lost
// where objects hold it and not where they do not, a default read
// differently where it is not stored, unknown fields pruned, rejections
// with what validation ratcheting still allows; unaffectedEnforcement Warn
// turns an unaffected tightening into a warning while an affected one
// stays an error.
func TestImpactOnStoredObjects(t *testing.T) {
	runImpactCases(t, []impactCase{{
		name: "field removed: data lost where objects hold it", newCRD: "unsafe/field-removed/new.yaml", blocked: true,
		findings: [][]string{{"existingFieldRemoval", "^.spec.pollInterval", "data loss: existing field removed (was string)",
			`1 of 2 stored __KIND__s holds data here, lost on their next write: default/first ("1m")`}},
		absent: []string{"default/second (", "existingResources"},
	}, {
		name: "default changed: objects without the field read differently", newCRD: "unsafe/default-changed/new.yaml", blocked: true,
		findings: [][]string{{"default", "^.spec.mode", `default changed: "fast" -> "slow"`,
			`1 of 2 stored __KIND__s reads differently: default/first ("fast", the old default -> "slow" where it is not stored)`}},
	}, {
		name: "unknown fields pruned when x-kubernetes-preserve-unknown-fields goes",
		crd:  "impact/preserve-crd.yaml", crs: "impact/preserve-crs.yaml", newCRD: "impact/preserve-removed.yaml", blocked: true,
		findings: [][]string{{"preserveUnknownFields", "^.spec", "data loss:",
			`1 of 2 stored __KIND__s holds data here, lost on their next write: default/extra (spec.legacyOwner: "team-a")`}},
	}, {
		name: "a tightened bound: the rejected object ratchets", newCRD: "impact/maximum-2.yaml", blocked: true,
		findings: [][]string{{"maximum", "^.spec.replicas", "maximum decreased: 10 -> 2",
			"1 of 2 stored __KIND__s rejected: default/first (Invalid value: 3: spec.replicas in body should be less than or equal to 2)",
			"updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused"}},
	}, {
		name:   "unaffectedEnforcement Warn: the unaffected tightening warns - the affected one blocks",
		newCRD: "impact/tightened.yaml", config: "unaffected-warn.yaml", blocked: true,
		findings: [][]string{
			{"maximum", "^.spec.replicas", "1 of 2 stored __KIND__s rejected: default/first"},
			{"maxLength", "Warning", "^.spec.name", "none of 2 stored __KIND__s affected; a warning under unaffectedEnforcement Warn"},
		},
	}, {
		name:   "unaffectedEnforcement Warn - nothing affected: applied with the warning",
		newCRD: "unsafe/maxlength-decreased/new.yaml", config: "unaffected-warn.yaml",
		findings: [][]string{{"maxLength", "Warning", "^.spec.name", "none of 2 stored __KIND__s affected; a warning under unaffectedEnforcement Warn"}},
	}, {
		name: "by default - the unaffected tightening blocks", newCRD: "unsafe/maxlength-decreased/new.yaml", blocked: true,
		findings: [][]string{{"maxLength", "^.spec.name", "maxLength decreased: 20 -> 10: none of 2 stored __KIND__s affected"}},
		absent:   []string{"unaffectedEnforcement"},
	}})
}

// TestImpactConversionWebhook: objects are read only at the versions whose
// schema changed. A description-only update of a CRD whose conversion
// webhook is not deployed is applied: no object is read through it. A
// change to a version other than the storage version needs the read
// through the webhook; when it fails, the finding names the webhook and
// the failure, and failMode decides.
func TestImpactConversionWebhook(t *testing.T) {
	const unreadable = "stored objects could not be read at version v2 through the conversion webhook (service default/dial-converter)"
	runImpactCases(t, []impactCase{{
		name: "description only: applied - nothing read",
		crd:  "conversion/crd.yaml", crs: "conversion/crs.yaml", newCRD: "conversion/description-only.yaml",
		absent: []string{"conversion webhook", "existingResources"},
	}, {
		name: "v2 tightened: the read through the missing webhook blocks under failMode closed",
		crd:  "conversion/crd.yaml", crs: "conversion/crs.yaml", newCRD: "conversion/v2-tightened.yaml", blocked: true,
		findings: [][]string{{"existingResources", "version v2", unreadable, "(failMode closed)", "dial-converter"}},
	}, {
		name: "v2 tightened under failMode open: a warning",
		crd:  "conversion/crd.yaml", crs: "conversion/crs.yaml", newCRD: "conversion/v2-tightened.yaml", config: "failmode-open.yaml", blocked: true,
		findings: [][]string{{"existingResources", "Warning", "version v2", unreadable, "(failMode open)"}},
	}})
}
