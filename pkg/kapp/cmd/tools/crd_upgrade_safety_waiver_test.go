package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
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
	}

	_, err = run(t, []string{td("old.yaml")}, []string{annotated("    " + config.WaiveAnnotation + ": enum\n")}, nil)
	requirePlainError(t, err)
	require.ErrorIs(t, err, config.ErrInvalidWaiver)
}
