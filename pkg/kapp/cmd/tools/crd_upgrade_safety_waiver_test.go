package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestCRDUpgradeSafetyWaiver: the tools command honours the waiver
// annotations of the new CRDs as the preflight and the webhook do: CI shows
// what a deploy will do. An invalid waiver is an error (exit status 1).
func TestCRDUpgradeSafetyWaiver(t *testing.T) {
	newCRD, err := os.ReadFile(td("new-unsafe.yaml"))
	require.NoError(t, err)
	annotated := func(annotations string) string {
		path := filepath.Join(t.TempDir(), "new.yaml")
		doc := strings.Replace(string(newCRD), "  name: widgets.example.com\n",
			"  name: widgets.example.com\n  annotations:\n"+annotations, 1)
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
		return path
	}

	resp, err := run(t, []string{td("old.yaml")}, []string{annotated(
		"    " + config.WaiveAnnotation + ": enum,minimum\n    " + config.WaiveReasonAnnotation + ": reviewed in PR 5\n")}, nil)
	require.NoError(t, err)
	rows := resp.rows(t)
	require.Equal(t, []string{"widgets.example.com v1 ^.spec.color enum warning", "widgets.example.com v1 ^.spec.size minimum warning"}, checks(rows))
	for _, r := range rows {
		require.True(t, strings.HasSuffix(r["message"], "(exempted: waive annotation: reviewed in PR 5)"), r["message"])
		require.Len(t, r["fingerprint"], config.FingerprintLen)
	}

	_, err = run(t, []string{td("old.yaml")}, []string{annotated("    " + config.WaiveAnnotation + ": enum\n")}, nil)
	requirePlainError(t, err)
	require.ErrorIs(t, err, config.ErrInvalidWaiver)
}

// byFinding maps "crd version field check" to each row's fingerprint.
func byFinding(rows []map[string]string) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		out[r["crd"]+" "+r["version"]+" "+r["field"]+" "+r["check"]] = r["fingerprint"]
	}
	return out
}

// TestCRDUpgradeSafetyFingerprintStable: the fingerprints of the findings
// of a CRD pair stay the same when the new CRD is reformatted (keys
// reordered, comments), moved to another file in another directory, and
// put after another CRD in that file, and the old one is renamed.
func TestCRDUpgradeSafetyFingerprintStable(t *testing.T) {
	resp, err := run(t, []string{td("old.yaml")}, []string{td("new-unsafe.yaml")}, nil)
	requireUnsafe(t, err)
	want := byFinding(resp.rows(t))
	require.NotEmpty(t, want)

	dir := t.TempDir()
	var doc map[string]any
	raw, err := os.ReadFile(td("new-unsafe.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	reordered, err := yaml.Marshal(doc) // keys sorted: another order than the file's
	require.NoError(t, err)
	require.NotEqual(t, string(raw), string(reordered))
	other, err := os.ReadFile(td("sprockets.yaml"))
	require.NoError(t, err)
	moved := filepath.Join(dir, "release-2", "crds", "all.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(moved), 0o755))
	require.NoError(t, os.WriteFile(moved, []byte(string(other)+"\n---\n# widgets, regenerated\n"+string(reordered)), 0o600))
	oldRaw, err := os.ReadFile(td("old.yaml"))
	require.NoError(t, err)
	renamed := filepath.Join(dir, "widgets-v1.yml")
	require.NoError(t, os.WriteFile(renamed, append([]byte(string(other)+"\n---\n"), oldRaw...), 0o600))

	resp, err = run(t, []string{renamed}, []string{moved}, nil)
	requireUnsafe(t, err)
	require.Equal(t, want, byFinding(resp.rows(t)))
}

// TestCRDUpgradeSafetyConfigWaivers: waivers of a Config among the inputs,
// by fingerprint: one in force waives its finding, an expired one does not
// (the finding says so); a waiver of the CRD that matches nothing is a
// staleWaiver warning, one of a CRD not in the inputs is not judged.
func TestCRDUpgradeSafetyConfigWaivers(t *testing.T) {
	resp, err := run(t, []string{td("old.yaml")}, []string{td("new-unsafe.yaml")}, nil)
	requireUnsafe(t, err)
	rows := resp.rows(t)
	require.Len(t, rows, 2)
	waived, expired := rows[0], rows[1]

	cfg := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`apiVersion: kapp.k14s.io/v1alpha1
kind: Config
preflightRules:
- name: CRDUpgradeSafety
  config:
    waivers:
    - fingerprint: "`+waived["fingerprint"]+`"
      crd: widgets.example.com
      reason: reviewed in PR 5
      expires: "2999-12-31"
      owner: team-widgets
    - fingerprint: "`+expired["fingerprint"]+`"
      reason: load test only
      expires: "2020-01-31"
    - crd: widgets.example.com
      checks: [type]
      reason: type change, reverted since
    - crd: gizmos.example.com
      reason: another CRD, not in this run
`), 0o600))
	resp, err = run(t, []string{td("old.yaml")}, []string{td("new-unsafe.yaml"), cfg}, nil)
	requireUnsafe(t, err)
	got := resp.rows(t)
	require.Equal(t, []string{
		"widgets.example.com   staleWaiver warning",
		waived["crd"] + " " + waived["version"] + " " + waived["field"] + " " + waived["check"] + " warning",
		expired["crd"] + " " + expired["version"] + " " + expired["field"] + " " + expired["check"] + " error",
	}, checks(got))
	require.Equal(t, "stale waiver: it matches no finding of this CRD (checks type), type change, reverted since", got[0]["message"])
	require.Contains(t, got[0]["remedy"], "remove the waiver")
	require.Equal(t, waived["message"]+" (exempted: reviewed in PR 5; owner team-widgets; until 2999-12-31)", got[1]["message"])
	require.Equal(t, expired["message"]+" (not exempted: the waiver expired at the end of 2020-01-31 UTC; it read: load test only)", got[2]["message"])
	require.Equal(t, waived["fingerprint"], got[1]["fingerprint"], "a waiver does not change what it waives")
}
