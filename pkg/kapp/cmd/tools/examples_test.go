package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestExamples keeps the shipped examples runnable: the Widget releases
// compare as examples/crd-upgrade/README.md says, and the kapp-controller
// App holds a valid CRD and a Config that blocks an unsafe release, uses no
// flag kapp-controller rejects, and deploys with the service account of
// rbac.yaml. (test/e2e's TestKappControllerExample runs it on kapp-controller.)
func TestExamples(t *testing.T) {

	t.Run("release 1 to 2 is safe", func(t *testing.T) {
		resp, err := run(t, []string{ex("crd-upgrade/crd-v1.yaml")}, []string{ex("crd-upgrade/crd-v2-safe.yaml")}, nil)
		require.NoError(t, err)
		require.Empty(t, resp.rows(t))
	})
	t.Run("release 2 to 3 is unsafe", func(t *testing.T) {
		resp, err := run(t, []string{ex("crd-upgrade/crd-v2-safe.yaml")}, []string{ex("crd-upgrade/crd-v3-unsafe.yaml")}, nil)
		requireUnsafe(t, err)
		require.Equal(t, []string{
			"widgets.demo.example.com v1 ^.spec.color existingFieldRemoval error", // data loss first
			"widgets.demo.example.com v1 ^.spec required error",
			"widgets.demo.example.com v1 ^.spec.replicas maximum error",
			"widgets.demo.example.com v1 ^.spec.size enum error",
		}, checks(resp.rows(t)))
	})
	t.Run("release 2 to 3 in warn mode passes with warnings", func(t *testing.T) {
		resp, err := run(t, []string{ex("crd-upgrade/crd-v2-safe.yaml")},
			[]string{ex("crd-upgrade/crd-v3-unsafe.yaml"), ex("crd-upgrade/config-warn.yaml")}, nil)
		require.NoError(t, err)
		require.Len(t, resp.rows(t), 4)
		for _, r := range resp.rows(t) {
			require.Equal(t, "warning", r["severity"])
		}
	})
	t.Run("kapp-controller App", func(t *testing.T) {
		raw, err := os.ReadFile(ex("kapp-controller/app.yaml"))
		require.NoError(t, err)
		var app struct {
			Metadata struct{ Namespace string }
			Spec     struct {
				ServiceAccountName string `json:"serviceAccountName"`
				Fetch              []struct {
					Inline struct {
						Paths map[string]string `json:"paths"`
					} `json:"inline"`
				} `json:"fetch"`
				Deploy []struct {
					Kapp struct {
						RawOptions []string `json:"rawOptions"`
					} `json:"kapp"`
				} `json:"deploy"`
			} `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal(raw, &app))
		require.Len(t, app.Spec.Fetch, 1)

		// kapp-controller rejects kapp flags off its allowlist, --preflight
		// among them (docs/kapp-controller.md): the Config enables the check.
		for _, d := range app.Spec.Deploy {
			for _, o := range d.Kapp.RawOptions {
				require.NotContains(t, o, "--preflight", "kapp-controller fails every reconcile of an App with rawOptions --preflight")
			}
		}

		// The service account the App deploys with is in rbac.yaml.
		rbac, err := os.ReadFile(ex("kapp-controller/rbac.yaml"))
		require.NoError(t, err)
		require.Contains(t, string(rbac), "kind: ServiceAccount\nmetadata:\n  name: "+app.Spec.ServiceAccountName+"\n  namespace: "+app.Metadata.Namespace+"\n")

		write := func(edit func(name, content string) string) []string {
			dir := t.TempDir()
			var files []string
			for name, content := range app.Spec.Fetch[0].Inline.Paths {
				p := filepath.Join(dir, name)
				require.NoError(t, os.WriteFile(p, []byte(edit(name, content)), 0o600))
				files = append(files, p)
			}
			return files
		}
		same := write(func(_, c string) string { return c })
		// Compared with itself: the CRD and the Config decode, nothing is unsafe.
		resp, err := run(t, same, same, nil)
		require.NoError(t, err)
		require.Empty(t, resp.rows(t))

		// The inline Config turns the check on in mode error: a release that
		// drops an enum value is unsafe.
		const enum = "enum: [small, medium, large]"
		dropped := write(func(name, c string) string {
			if name == "crd.yml" {
				require.Contains(t, c, enum)
				return strings.Replace(c, enum, "enum: [small, medium]", 1)
			}
			return c
		})
		resp, err = run(t, same, dropped, nil)
		requireUnsafe(t, err)
		require.Equal(t, []string{"widgets.demo.example.com v1 ^.spec.size enum error"}, checks(resp.rows(t)))
	})
}

// ex is the path of a file of examples/.
func ex(p string) string { return filepath.Join("..", "..", "..", "..", "examples", p) }
