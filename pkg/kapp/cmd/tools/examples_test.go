package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestExamples keeps the shipped examples runnable: the Widget releases
// compare as examples/crd-upgrade/README.md says, and the inline documents
// of the kapp-controller App are a valid CRD and Config.
func TestExamples(t *testing.T) {
	ex := func(p string) string { return filepath.Join("..", "..", "..", "..", "examples", p) }

	t.Run("release 1 to 2 is safe", func(t *testing.T) {
		resp, err := run(t, []string{ex("crd-upgrade/crd-v1.yaml")}, []string{ex("crd-upgrade/crd-v2-safe.yaml")}, nil)
		require.NoError(t, err)
		require.Empty(t, resp.rows(t))
	})
	t.Run("release 2 to 3 is unsafe", func(t *testing.T) {
		resp, err := run(t, []string{ex("crd-upgrade/crd-v2-safe.yaml")}, []string{ex("crd-upgrade/crd-v3-unsafe.yaml")}, nil)
		requireUnsafe(t, err)
		require.Equal(t, []string{
			"widgets.demo.example.com v1 ^.spec required error",
			"widgets.demo.example.com v1 ^.spec.color existingFieldRemoval error",
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
	t.Run("kapp-controller App inline documents", func(t *testing.T) {
		raw, err := os.ReadFile(ex("kapp-controller/app.yaml"))
		require.NoError(t, err)
		var app struct {
			Spec struct {
				Fetch []struct {
					Inline struct {
						Paths map[string]string `json:"paths"`
					} `json:"inline"`
				} `json:"fetch"`
			} `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal(raw, &app))
		require.Len(t, app.Spec.Fetch, 1)
		dir := t.TempDir()
		var files []string
		for name, content := range app.Spec.Fetch[0].Inline.Paths {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
			files = append(files, p)
		}
		require.Len(t, files, 2)
		// Compared with itself: the CRD and the Config decode, nothing is unsafe.
		resp, err := run(t, files, files, nil)
		require.NoError(t, err)
		require.Empty(t, resp.rows(t))
	})
}
