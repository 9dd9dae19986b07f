package report

import (
	"errors"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"github.com/stretchr/testify/require"
)

// TestDeployError: kapp's error lists, after the run's error, the error
// findings the report keeps in the one order of every output (data loss
// first across CRDs, then by CRD), each with its way forward, then what
// the per-CRD bound left out: the same lines as each finding rendered on
// its own (ErrorLine) after finding.Bound. It unwraps to the
// run's error.
func TestDeployError(t *testing.T) {
	runErr := errors.New("unsafe CRD upgrade: 4 error findings")
	findings := []finding.Finding{
		{CRD: "b.example.com", Version: "v1", Check: "storedVersionRemoval", Severity: finding.SeverityError, DataLoss: true,
			ChangeText: "stored version removed", Fingerprint: "bbbbbbbbbbbb",
			Remedy: &finding.Remedy{Action: finding.RemedyMigrateStorage, Version: "v1", Command: "kapp tools crd-migrate-storage"}},
		{CRD: "a.example.com", Version: "v1", Field: "^.spec.x", Check: "type", Severity: finding.SeverityError, ChangeText: "type changed"},
		{CRD: "a.example.com", Version: "v1", Field: "^.spec.y", Check: "enum", Severity: finding.SeverityError, ChangeText: "enum added"},
		{CRD: "a.example.com", Version: "v1", Field: "^.spec.z", Check: "mapType", Severity: finding.SeverityWarning, ChangeText: "map type"},
		{CRD: "c.example.com", Version: "v1", Field: "^.spec.w", Check: "maximum", Severity: finding.SeverityError, ChangeText: "maximum added"},
	}
	finding.SortFindings(findings)
	for _, maxPerCRD := range []int{0, 1, 2} {
		kept, omitted := finding.Bound(findings, maxPerCRD)
		var want []string
		for _, f := range kept {
			if f.Severity == finding.SeverityError {
				want = append(want, ErrorLine(f))
			}
		}
		want = append(want, OmittedLines(omitted)...)

		err := &DeployError{Err: runErr, Report: New(nil, findings, maxPerCRD, nil)}
		require.Equal(t, want, err.Lines(), "maxPerCRD %d", maxPerCRD)
		require.ErrorIs(t, err, runErr)
		text := runErr.Error() + ":"
		for _, l := range want {
			text += "\n  " + l
		}
		require.Equal(t, text, err.Error())
	}
	require.Equal(t, "crd b.example.com version v1: [storedVersionRemoval] data loss: stored version removed [fp:bbbbbbbbbbbb]\n"+
		"    way forward: keep \"v1\", deploy the new storage version, run 'kapp tools crd-migrate-storage', then remove \"v1\"",
		(&DeployError{Err: runErr, Report: New(nil, findings, 0, nil)}).Lines()[0], "data loss first, across CRDs")
}

// TestWarningLines: the kapp hook prints the warning findings the report
// keeps and, only when no finding is an error, what the bound left out.
func TestWarningLines(t *testing.T) {
	warn := func(crd, field string) finding.Finding {
		return finding.Finding{CRD: crd, Version: "v1", Field: schemapath.Path(field), Check: "mapType",
			Severity: finding.SeverityWarning, ChangeText: "map type"}
	}
	warnings := []finding.Finding{warn("a.example.com", "^.x"), warn("a.example.com", "^.y")}
	require.Equal(t, []string{"crd a.example.com version v1 field ^.x: [mapType] map type",
		"... and 1 more finding for CRD a.example.com"}, New(nil, warnings, 1, nil).WarningLines())

	withError := append([]finding.Finding{{CRD: "a.example.com", Version: "v1", Field: "^.a", Check: "type",
		Severity: finding.SeverityError, ChangeText: "type changed"}}, warnings...)
	require.Equal(t, []string{"crd a.example.com version v1 field ^.x: [mapType] map type"},
		New(nil, withError, 2, nil).WarningLines(), "the error lists the note")
}
