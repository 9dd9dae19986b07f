package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// configCase deploys testdata/base, creates custom resources, then deploys
// newCRD with the given config (a testdata/configs file, "" for none) and
// kapp flags, and checks whether it was blocked.
type configCase struct {
	name   string
	newCRD string // template under testdata
	config string // template under testdata/configs, "" for none
	// configInline puts the Config in the same YAML file as the CRD instead
	// of a separate -f file.
	configInline bool
	flags        []string

	blocked bool
	// finding is the check ID that must be printed on a line with the CRD
	// name and detail (a field path, an object name), "" for none;
	// noFinding must not be printed.
	finding, detail, noFinding string
	// applied is a string the new CRD's v1 schema JSON contains once the
	// change is applied, gone one it no longer contains.
	applied, gone string
	// contains are further strings the output must contain.
	contains []string
}

func runConfigCases(t *testing.T, cases []configCase) {
	e := setup(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := newNames(t)
			oldCRD := "base/crd.yaml"
			crs := "base/crs.yaml"
			if strings.HasPrefix(c.newCRD, "unhandled/") {
				oldCRD, crs = "unhandled/old.yaml", "unhandled/crs.yaml"
			}
			before := e.appWithCRs(t, n, oldCRD, crs)

			files := map[string][]byte{"crd.yaml": n.render(t, c.newCRD), "marker.yaml": n.marker()}
			var extraDirs []string
			if c.config != "" {
				cfg := n.render(t, "configs/"+c.config)
				if c.configInline {
					files["crd.yaml"] = append(append(files["crd.yaml"], []byte("\n---\n")...), cfg...)
				} else {
					extraDirs = append(extraDirs, dir(t, map[string][]byte{"config.yaml": cfg}))
				}
			}
			r := e.deploy(t, n.App, append([]string{dir(t, files)}, extraDirs...), c.flags...)

			if c.blocked {
				require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail:\n%s", r.out)
				e.requireUnchanged(t, n, before)
			} else {
				require.Equalf(t, 0, r.exitCode, "kapp was expected to succeed:\n%s", r.out)
				require.NotContains(t, r.out, blockedError)
				require.NotEmpty(t, c.applied+c.gone, "a case that passes must say how to see the change")
				v1 := e.crdSchemaJSON(t, n, "v1")
				if c.applied != "" {
					require.Contains(t, v1, c.applied, "the change was not applied")
				}
				if c.gone != "" {
					require.NotContains(t, v1, c.gone, "the change was not applied")
				}
			}
			if c.finding != "" {
				requireFinding(t, r.out, c.finding, n.CRD, c.detail)
			}
			if c.noFinding != "" {
				requireNoFinding(t, r.out, c.noFinding, n.CRD)
			}
			for _, s := range c.contains {
				require.Contains(t, r.out, s)
			}
		})
	}
}

const preflightFlag = "--preflight=CRDUpgradeSafety"

// TestFailMode adds an item schema to a string field, a change the check
// does not understand (unhandled): failMode closed (the default) blocks it,
// open lets it through.
func TestFailMode(t *testing.T) {
	runConfigCases(t, []configCase{{
		name: "default-is-closed", newCRD: "unhandled/new.yaml", flags: []string{preflightFlag},
		blocked: true, finding: "unhandled", detail: "^.spec.color", contains: []string{blockedError},
	}, {
		name: "closed", newCRD: "unhandled/new.yaml", config: "failmode-closed.yaml",
		blocked: true, finding: "unhandled", detail: "^.spec.color", contains: []string{blockedError},
	}, {
		name: "open", newCRD: "unhandled/new.yaml", config: "failmode-open.yaml",
		noFinding: "unhandled", applied: `"items":{"type":"string"}`,
	}})
}

// TestPerCheckConfig: per-check enforcement and exemptions change what an
// enum value removal does.
func TestPerCheckConfig(t *testing.T) {
	enumRemoved := "unsafe/enum-value-removed/new.yaml"
	applied := `"enum":["red","blue"]`
	runConfigCases(t, []configCase{{
		name: "enum-removal-enforcement-none", newCRD: enumRemoved, config: "enum-removal-none.yaml",
		noFinding: "enum", applied: applied,
	}, {
		name: "exemption-for-enum", newCRD: enumRemoved, config: "exempt-enum.yaml",
		applied: applied, finding: "enum", detail: "^.spec.color",
		contains: []string{"reviewed in e2e, no resource uses the removed value"},
	}, {
		name: "exemption-for-another-check", newCRD: enumRemoved, config: "exempt-default.yaml",
		blocked: true, finding: "enum", detail: "^.spec.color", contains: []string{blockedError},
	}})
}

// TestPreflightSelection: which of --preflight and preflightRules enables
// the check (kapp's registry semantics: the flag wins), and a Config given as
// a separate -f file or inside the deployed manifests.
func TestPreflightSelection(t *testing.T) {
	unsafe := "unsafe/field-removed/new.yaml"
	field := "^.spec.pollInterval"
	gone := `"pollInterval"`
	runConfigCases(t, []configCase{{
		name: "neither", newCRD: unsafe, gone: gone, noFinding: "existingFieldRemoval",
	}, {
		name: "flag-alone", newCRD: unsafe, flags: []string{preflightFlag},
		blocked: true, finding: "existingFieldRemoval", detail: field, contains: []string{blockedError},
	}, {
		name: "config-alone-separate-file", newCRD: unsafe, config: "enabled.yaml",
		blocked: true, finding: "existingFieldRemoval", detail: field, contains: []string{blockedError},
	}, {
		name: "config-alone-in-manifests", newCRD: unsafe, config: "enabled.yaml", configInline: true,
		blocked: true, finding: "existingFieldRemoval", detail: field, contains: []string{blockedError},
	}, {
		name: "flag-and-config-uses-config", newCRD: unsafe, config: "warn.yaml", flags: []string{preflightFlag},
		gone: gone, finding: "existingFieldRemoval", detail: field,
	}, {
		name: "flag-without-check-wins-over-config", newCRD: unsafe, config: "enabled.yaml",
		flags: []string{"--preflight=PermissionValidation"},
		gone:  gone, noFinding: "existingFieldRemoval",
	}})
}

// TestInvalidPreflightSettings: an unknown check name or a malformed config
// fails the deploy with a clear error and applies nothing, even for a change
// that is safe.
func TestInvalidPreflightSettings(t *testing.T) {
	safe := "safe/new.yaml"
	runConfigCases(t, []configCase{{
		name: "unknown-check-flag", newCRD: safe, flags: []string{"--preflight=NoSuchCheck"},
		blocked: true, contains: []string{`unknown preflight check "NoSuchCheck"`},
	}, {
		name: "unknown-check-config", newCRD: safe, config: "unknown-check.yaml",
		blocked: true, contains: []string{`unknown preflight check in configuration: "NoSuchCheck"`},
	}, {
		name: "malformed-mode", newCRD: safe, config: "malformed-mode.yaml",
		blocked: true, contains: []string{"preflight configuration settings failed", "CRDUpgradeSafety", "mode", "loud"},
	}, {
		name: "malformed-key", newCRD: safe, config: "malformed-key.yaml", configInline: true,
		blocked: true, contains: []string{"preflight configuration settings failed", "CRDUpgradeSafety", "removalEnforcment"},
	}})
}

// TestConfigWaiverByFingerprint: a blocked deploy prints each finding's
// fingerprint; a Config waiver naming it (with an expiry in the future)
// lets the same change through, the finding a warning that says who
// waived it until when, under the same fingerprint.
func TestConfigWaiverByFingerprint(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	before := e.appWithCRs(t, n, "base/crd.yaml", "base/crs.yaml")
	crd := dir(t, map[string][]byte{"crd.yaml": n.render(t, "unsafe/enum-value-removed/new.yaml"), "marker.yaml": n.marker()})

	r := e.deploy(t, n.App, []string{crd}, preflightFlag)
	require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail:\n%s", r.out)
	e.requireUnchanged(t, n, before)
	line, ok := findingLine(r.out, "enum", n.CRD, "^.spec.color")
	require.True(t, ok, r.out)
	fp := regexp.MustCompile(`\[fp:([0-9a-f]{12})\]`).FindStringSubmatch(line)
	require.NotNil(t, fp, "no fingerprint on the finding: %s", line)

	cfg := strings.ReplaceAll(string(n.render(t, "configs/waive-fingerprint.yaml")), "__FP__", fp[1])
	r = e.deploy(t, n.App, []string{crd, dir(t, map[string][]byte{"config.yaml": []byte(cfg)})})
	require.Equalf(t, 0, r.exitCode, "the waived change was blocked:\n%s", r.out)
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"enum":["red","blue"]`, "the waived change was not applied")
	require.Contains(t, r.out, "(exempted: reviewed in e2e, no resource uses the removed value; owner team-e2e; until 2999-12-31) [fp:"+fp[1]+"]")
	requireNoFinding(t, r.out, "staleWaiver")
}
