package report

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	_ "github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety" // every room's check descriptors
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/stretchr/testify/require"
)

// TestEveryCheckHasARemedy: every check's findings carry a way forward,
// worded here and documented in its section of docs/checks.md.
func TestEveryCheckHasARemedy(t *testing.T) {
	for _, id := range config.AllCheckIDs() {
		a := finding.RemedyActionOf(id)
		require.NotEmpty(t, a, "check %s has no remedy (its descriptor: finding.Register in its file)", id)
		text := RemedyText(finding.Finding{Check: id, Remedy: &finding.Remedy{Action: a}})
		require.NotEmpty(t, text, "remedy %s of check %s has no words (RemedyText)", a, id)
		h, ok := HelpFor(id)
		require.True(t, ok, id)
		require.Contains(t, h.Markdown, "**Way forward.**", "docs/checks.md: the section of %s has no way forward", id)
	}
}

// TestRemedyInEveryOutput: a finding's remedy, with the facts it names
// (the command, the objects), appears in every output.
func TestRemedyInEveryOutput(t *testing.T) {
	f := finding.Finding{CRD: "widgets.example.com", Version: "v1alpha1", Check: config.CheckStoredVersionRemoval,
		Severity: finding.SeverityError, DataLoss: true,
		ChangeText: `stored version "v1alpha1" removed: objects stored in it must be migrated first`,
		Remedy: &finding.Remedy{Action: finding.RemedyMigrateStorage, Version: "v1alpha1",
			Command: "kapp tools crd-migrate-storage --crd widgets.example.com --to v1"}}
	const cmd = "kapp tools crd-migrate-storage --crd widgets.example.com --to v1"
	r := New([]string{f.CRD}, []finding.Finding{f}, 0, nil)
	js, err := JSON(r)
	require.NoError(t, err)
	sarif, err := SARIF(r)
	require.NoError(t, err)
	denial, _ := Admission([]finding.Finding{f})
	table := FindingsTable(r, TableOptions{})
	outputs := map[string]string{
		"json":       string(js),
		"sarif":      string(sarif),
		"markdown":   Markdown(r),
		"github":     GitHub(r),
		"kapp error": ErrorLine(f),
		"denial":     strings.Join(denial, "\n"),
		"table":      table.Rows[0][6].String(),
	}
	for name, out := range outputs {
		require.Contains(t, out, cmd, "%s has no remedy", name)
	}
	require.Contains(t, string(js), `"action": "migrateStorage"`)
	require.Equal(t, "data loss: "+f.ChangeText, Message(f), "the remedy is not part of the message")

	// Objects read: the remedy names them.
	g := f
	g.Check, g.Version = config.CheckMaximum, "v1"
	g.Remedy = &finding.Remedy{Action: finding.RemedyFixObjectsFirst, Objects: []string{"ns/nine", "ns/seven"}, MoreObjects: 2}
	require.Contains(t, RemedyText(g), "ns/nine, ns/seven and 2 more objects")
}

// TestReadDependentsRemedy: the ownerReferences remedy names the command
// that grants the reads and the first resources the identity may not
// list, however many there are (the least-privilege webhook may list
// almost none).
func TestReadDependentsRemedy(t *testing.T) {
	f := finding.Finding{Check: config.CheckOwnerReferences, Remedy: &finding.Remedy{Action: finding.RemedyReadDependents,
		Command: finding.DependentsRBACCommand, Resources: []string{"configmaps", "deployments.apps", "pods", "secrets", "services"}}}
	require.Equal(t, "let the check list the 5 resources it may not (configmaps, deployments.apps, pods and 2 more), then try again: for the webhook, '"+
		finding.DependentsRBACCommand+"' (list on every resource); for a deploy or the tools command, an identity that may list them; "+
		"or keep the removed versions", RemedyText(f))
	f.Remedy = &finding.Remedy{Action: finding.RemedyReadDependents}
	require.Equal(t, "try again once the resources can be listed (an aggregated API that was down), or keep the removed versions", RemedyText(f))
}
