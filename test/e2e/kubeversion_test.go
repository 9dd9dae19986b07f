package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNumericFormatByClusterVersion: int32 added to an integer whose
// stored value is beyond the range is judged as the cluster in front of
// the check validates it (issue 31, item 9). On 1.37, whose validation
// enforces the numeric formats, the deploy is blocked by a format finding
// that names the version it depends on and the stored object it rejects,
// and the live tools command says the same; on 1.35, which ignores them,
// both pass and the update applies.
func TestNumericFormatByClusterVersion(t *testing.T) {
	e := setup(t)
	n := newNames(t)
	before := e.appWithCRs(t, n, "base/crd.yaml", "impact/size-big-crs.yaml")
	newCRD := crdDir(t, n, "impact/size-int32.yaml")
	minor := kubeMinor(t, e)
	judged := fmt.Sprintf("judged for 1.%d", minor)

	// The json output prints messages in full (the table shortens them).
	live := e.kapp(t, "", "tools", "crd-upgrade-safety", "--file2", newCRD, "--output", "json")
	if minor >= 37 {
		require.Equalf(t, 3, live.exitCode, "the live tools command was expected to find the format:\n%s", live.out)
		for _, s := range []string{`"check": "format"`, `"field": "^.spec.size"`,
			`format added: (none) -> \"int32\" (values beyond the int32 range -2147483648..2147483647 are rejected) (Kubernetes 1.37 and later; ` + judged + `): 1 of 1 stored ` + n.Kind + ` rejected: default/big`} {
			require.Contains(t, live.out, s)
		}
	} else {
		require.Equalf(t, 0, live.exitCode, "the live tools command was expected to pass:\n%s", live.out)
		require.NotContains(t, live.out, `"check": "format"`)
		require.NotContains(t, live.out, "default/big")
	}
	r := e.kapp(t, "", "tools", "crd-upgrade-safety", "--file2", newCRD, "--kube-version", "1.35")
	require.Equalf(t, 1, r.exitCode, "--kube-version against the cluster was expected to be refused:\n%s", r.out)
	require.Contains(t, r.out, "expected --kube-version with --file or --git-ref")

	r = e.deploy(t, n.App, []string{newCRD}, preflightFlag)
	if minor >= 37 {
		require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail:\n%s", r.out)
		requireFinding(t, r.out, "format", n.CRD, "^.spec.size", "(Kubernetes 1.37 and later; "+judged+")", "default/big")
		e.requireUnchanged(t, n, before)
		return
	}
	require.Equalf(t, 0, r.exitCode, "kapp was expected to succeed:\n%s", r.out)
	requireNoFinding(t, r.out, "format")
	require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"format":"int32"`)
}
