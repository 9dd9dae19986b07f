package report

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"

	"github.com/stretchr/testify/require"
)

func TestAdmission(t *testing.T) {
	f := func(sev finding.Severity, version, field, check, msg string) finding.Finding {
		return finding.Finding{CRD: "widgets.example.com", Version: version, Field: schemapath.Path(field), Check: check, Severity: sev, ChangeText: msg}
	}
	denial, warnings := Admission([]finding.Finding{
		f(finding.SeverityError, "", "", "crdDeletion", "deleting the CRD would delete its 3 existing custom resources"),
		f(finding.SeverityError, "v1", "^.spec.size", "minimum", "minimum increased: 1 -> 5"),
		f(finding.SeverityWarning, "v1", "^.spec.ref", "mapType", "map type changed: granular -> atomic"),
		f(finding.SeverityWarning, "", "", "enum", "multi\nline\tmessage (exempted: waive annotation: PR 1)"),
	})
	require.Equal(t, []string{
		"crd widgets.example.com: [crdDeletion] deleting the CRD would delete its 3 existing custom resources",
		"crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5",
	}, denial)
	require.Equal(t, []string{
		"CRDUpgradeSafety: version v1 field ^.spec.ref: [mapType] map type changed: granular -> atomic",
		"CRDUpgradeSafety: [enum] multi line message (exempted: waive annotation: PR 1)",
	}, warnings)
}

// TestAdmissionBounds: a huge CRD's answer stays within the bounds, with
// the count of what was left out, and a long warning keeps its end (where
// an exemption's reason is).
func TestAdmissionBounds(t *testing.T) {
	var fs []finding.Finding
	for i := range 100 {
		sev := finding.SeverityError
		if i%2 == 0 {
			sev = finding.SeverityWarning
		}
		fs = append(fs, finding.Finding{CRD: "widgets.example.com", Version: "v1", Field: schemapath.Path(fmt.Sprintf("^.spec.f%03d", i)),
			Check: "type", Severity: sev, ChangeText: strings.Repeat("long ", 200) + "(exempted: waive annotation: the end)"})
	}
	denial, warnings := Admission(fs)
	require.Len(t, denial, MaxDenialLines+1)
	require.Equal(t, "... and 30 more error findings", denial[MaxDenialLines])
	require.Len(t, warnings, MaxWarnings)
	require.Equal(t, "CRDUpgradeSafety: ... and 36 more warnings", warnings[MaxWarnings-1])
	total := 0
	for _, w := range warnings {
		require.LessOrEqual(t, utf8.RuneCountInString(w), MaxWarningRunes)
		total += len(w)
	}
	require.LessOrEqual(t, total, 4096, "the apiserver's total for warnings")
	require.True(t, strings.HasSuffix(warnings[0], "(exempted: waive annotation: the end)"), warnings[0])
}

// TestStoredValuesLeftOut: the text of a finding's impact and of a stored
// object's finding names the objects, the fields and the apiserver's error
// type; the value and the apiserver's detail print where the findings
// carry them, and are gone where finding.WithoutStoredValues took
// them out, which leaves the findings it was given as they were.
func TestStoredValuesLeftOut(t *testing.T) {
	rejected := finding.ObjectEffect{Object: "default/one", Field: "spec.token", SchemaPath: "^.spec.token",
		Type: "Invalid value", Value: `"s3cr3t"`, Detail: "spec.token in body should match '^[0-9]+$'"}
	pruned := finding.ObjectEffect{Object: "default/two", Field: "spec.old.key", SchemaPath: "^.spec.old", Value: `"s3cr3t"`}
	findings := []finding.Finding{{
		CRD: "widgets.example.com", Version: "v1", Field: "^.spec.token", Check: "pattern", Severity: finding.SeverityError,
		ChangeText: "pattern changed",
		Impact: &finding.Impact{Source: finding.SourceCluster, Kind: "Widget", Objects: 2, Affected: 2,
			Effects: []finding.EffectCount{
				{Effect: finding.EffectRejected, Objects: 1, Examples: []finding.ObjectEffect{rejected}},
				{Effect: finding.EffectPruned, Objects: 1, Examples: []finding.ObjectEffect{pruned}},
			}},
	}, {
		CRD: "widgets.example.com", Version: "v1", Check: "existingResources", Severity: finding.SeverityError,
		Object: &finding.ObjectFinding{Source: finding.SourceCluster, Kind: "Widget", Name: "default/one",
			Effect: finding.EffectRejected, Fields: []finding.ObjectEffect{rejected}},
	}}
	findings = append(findings, finding.Finding{CRD: "widgets.example.com", Version: "v2", Check: "existingResources",
		Severity: finding.SeverityError, ChangeText: "stored objects could not be read at version v2 (failMode closed)",
		ReadError: `conversion webhook failed: cannot convert spec.token "s3cr3t"`})
	require.Contains(t, Message(findings[2]), `(failMode closed): conversion webhook failed: cannot convert spec.token "s3cr3t"`)
	require.Equal(t, "stored objects could not be read at version v2 (failMode closed)",
		Message(finding.WithoutStoredValues(findings)[2]))
	shown := Message(findings[0]) + "\n" + Message(findings[1])
	require.Contains(t, shown, `default/one (Invalid value: "s3cr3t": spec.token in body should match '^[0-9]+$')`)
	require.Contains(t, shown, `default/two (spec.old.key: "s3cr3t")`)
	require.Contains(t, shown, `spec.token: Invalid value: "s3cr3t": spec.token in body should match`)

	withheld := finding.WithoutStoredValues(findings)
	text := Message(withheld[0]) + "\n" + Message(withheld[1])
	require.NotContains(t, text, "s3cr3t")
	require.NotContains(t, text, "in body should match")
	require.Contains(t, text, "1 of 2 stored Widgets rejected: default/one (Invalid value)")
	require.Contains(t, text, "lost on their next write: default/two (spec.old.key)")
	require.Contains(t, text, "existing Widget default/one would be invalid: spec.token: Invalid value")
	require.Equal(t, shown, Message(findings[0])+"\n"+Message(findings[1]), "the findings given stay as they were")
}
