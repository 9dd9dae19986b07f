package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kubeMinor is the minor version of the cluster under test: KUBE_VERSION
// (hack/test-e2e.sh sets it, e.g. 1.37), else what the apiserver reports.
func kubeMinor(t *testing.T, e *env) int {
	t.Helper()
	v := os.Getenv("KUBE_VERSION")
	if v == "" {
		info, err := e.core.Discovery().ServerVersion()
		require.NoError(t, err)
		v = info.Major + "." + strings.TrimSuffix(info.Minor, "+")
	}
	major, minor, ok := strings.Cut(v, ".")
	n, err := strconv.Atoi(minor)
	require.True(t, ok && major == "1" && err == nil, "unexpected Kubernetes version %q", v)
	return n
}

// requireKubeVersion skips the test on a cluster older than 1.minor,
// saying why: the suite runs against every supported version and some
// behaviour is new (hack/test.sh lists the skips).
func requireKubeVersion(t *testing.T, e *env, minor int, why string) {
	t.Helper()
	if got := kubeMinor(t, e); got < minor {
		t.Skipf("needs Kubernetes 1.%d or newer, the cluster is 1.%d: %s", minor, got, why)
	}
}
