package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolsCRDUpgradeSafetyLive runs `kapp tools crd-upgrade-safety` against
// the live cluster (no --file: the old CRDs come from the cluster, only
// --file2 names the new ones): exit status 0 when safe, 3 when unsafe, with
// the findings as text or, with --json, as kapp's JSON UI document. It
// changes nothing on the cluster.
func TestToolsCRDUpgradeSafetyLive(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	before := e.snapshot(t, n)

	tools := func(stdin string, args ...string) result {
		return e.kapp(t, stdin, append([]string{"tools", "crd-upgrade-safety"}, args...)...)
	}
	safe := filepath.Join(crdDir(t, n, "safe/new.yaml"), "crd.yaml")
	unsafe := filepath.Join(crdDir(t, n, "unsafe/enum-value-removed/new.yaml"), "crd.yaml")

	t.Run("safe", func(t *testing.T) {
		r := tools("", "--file2", safe)
		require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
		requireNoFinding(t, r.out, "enum", n.CRD)
	})

	t.Run("unsafe", func(t *testing.T) {
		r := tools("", "--file2", unsafe)
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "enum", n.CRD, "v1", "^.spec.color")
	})

	t.Run("unsafe-from-stdin", func(t *testing.T) {
		data, err := os.ReadFile(unsafe)
		require.NoError(t, err)
		r := tools(string(data), "--file2", "-")
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "enum", n.CRD, "v1", "^.spec.color")
	})

	t.Run("live-check-sees-existing-resources", func(t *testing.T) {
		// Removing blue is an enum finding, and custom resource "second"
		// uses blue: only the live check can tell.
		data, err := os.ReadFile(unsafe)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), "crd.yaml")
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), "enum: [red, blue]", "enum: [red, green]", 1)), 0o644))
		r := tools("", "--file2", p)
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "enum", n.CRD, "rejected: default/second")
	})

	t.Run("json", func(t *testing.T) {
		r := tools("", "--file2", unsafe, "--json")
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		var doc struct {
			Tables []struct {
				Rows []map[string]string
			}
		}
		require.NoErrorf(t, json.Unmarshal([]byte(r.stdout), &doc), "stdout is not a JSON document:\n%s", r.stdout)
		var rows []map[string]string
		for _, tbl := range doc.Tables {
			rows = append(rows, tbl.Rows...)
		}
		require.NotEmpty(t, rows, "no table rows in:\n%s", r.stdout)
		found := false
		for _, row := range rows {
			for _, k := range []string{"crd", "version", "field", "check", "severity", "message"} {
				require.Containsf(t, row, k, "row %v lacks key %q", row, k)
			}
			if row["crd"] == n.CRD && row["check"] == "enum" && row["version"] == "v1" &&
				row["field"] == "^.spec.color" && row["severity"] == "error" {
				found = true
				require.Contains(t, row["message"], "green")
			}
		}
		require.Truef(t, found, "no enum error row for %s ^.spec.color in %v", n.CRD, rows)
	})

	t.Run("could-not-run-bad-input", func(t *testing.T) {
		r := tools("", "--file2", filepath.Join(t.TempDir(), "missing.yaml"))
		require.Equalf(t, 1, r.exitCode, "output:\n%s", r.out)
	})

	t.Run("could-not-run-no-cluster", func(t *testing.T) {
		// A kubeconfig naming a loopback port nobody listens on.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		kc := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(kc, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: gone, context: {cluster: gone, user: u}}]
current-context: gone
`, addr), 0o600))
		r := tools("", "--file2", unsafe, "--kubeconfig", kc)
		require.Equalf(t, 1, r.exitCode, "output:\n%s", r.out)
	})

	t.Run("offline", func(t *testing.T) {
		old := filepath.Join(crdDir(t, n, "base/crd.yaml"), "crd.yaml")
		r := tools("", "-f", old, "--file2", unsafe, "--kubeconfig", "/nonexistent/kubeconfig")
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "enum", n.CRD, "v1", "^.spec.color")
	})

	e.requireUnchanged(t, n, before)
}
