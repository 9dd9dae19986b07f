package report

import (
	"fmt"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/stretchr/testify/require"
)

func TestAdmission(t *testing.T) {
	f := func(sev crdupgradesafety.Severity, version, field, check, msg string) crdupgradesafety.Finding {
		return crdupgradesafety.Finding{CRD: "widgets.example.com", Version: version, Field: schemapath.Path(field), Check: check, Severity: sev, ChangeText: msg}
	}
	denial, warnings := Admission([]crdupgradesafety.Finding{
		f(crdupgradesafety.SeverityError, "", "", "crdDeletion", "deleting the CRD would delete its 3 existing custom resources"),
		f(crdupgradesafety.SeverityError, "v1", "^.spec.size", "minimum", "minimum increased: 1 -> 5"),
		f(crdupgradesafety.SeverityWarning, "v1", "^.spec.ref", "mapType", "map type changed: granular -> atomic"),
		f(crdupgradesafety.SeverityWarning, "", "", "enum", "multi\nline\tmessage (exempted: waive annotation: PR 1)"),
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
	var fs []crdupgradesafety.Finding
	for i := range 100 {
		sev := crdupgradesafety.SeverityError
		if i%2 == 0 {
			sev = crdupgradesafety.SeverityWarning
		}
		fs = append(fs, crdupgradesafety.Finding{CRD: "widgets.example.com", Version: "v1", Field: schemapath.Path(fmt.Sprintf("^.spec.f%03d", i)),
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
