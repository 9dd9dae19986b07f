package preflight

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/preflight/crdupgradesafety"
	"github.com/stretchr/testify/require"
)

func TestFindingLine(t *testing.T) {
	cases := []struct {
		f    crdupgradesafety.Finding
		want string
	}{
		{crdupgradesafety.Finding{CRD: "widgets.example.com", Version: "v1", Field: "^.spec.size", Check: "minimum",
			Message: "minimum increased: 1 -> 5"},
			"crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5"},
		{crdupgradesafety.Finding{CRD: "widgets.example.com", Check: "scope", Message: "scope changed: Namespaced -> Cluster"},
			"crd widgets.example.com: [scope] scope changed: Namespaced -> Cluster"},
		{crdupgradesafety.Finding{CRD: "widgets.example.com", Version: "v1beta1", Check: "servedVersionRemoval", Message: "m"},
			"crd widgets.example.com version v1beta1: [servedVersionRemoval] m"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, FindingLine(tc.f))
	}
}

func TestSummaryAndOmitted(t *testing.T) {
	require.Equal(t, "No unsafe changes in 1 CRD", Summary(nil, 1))
	require.Equal(t, "No unsafe changes in 0 CRDs", Summary(nil, 0))
	fs := []crdupgradesafety.Finding{
		{Severity: crdupgradesafety.SeverityError}, {Severity: crdupgradesafety.SeverityWarning},
		{Severity: crdupgradesafety.SeverityWarning},
	}
	require.Equal(t, "1 error, 2 warnings in 3 CRDs", Summary(fs, 3))
	require.Equal(t, []string{
		"... and 1 more finding for CRD a.example.com",
		"... and 7 more findings for CRD b.example.com",
	}, OmittedLines(map[string]int{"b.example.com": 7, "a.example.com": 1, "c.example.com": 0}))
}

func TestFindingsTable(t *testing.T) {
	table := FindingsTable([]crdupgradesafety.Finding{{CRD: "a", Version: "v1", Field: "^.x", Check: "type",
		Severity: crdupgradesafety.SeverityError, Message: "m"}}, map[string]int{"a": 2})
	var keys []string
	for _, h := range table.Header {
		keys = append(keys, h.Key)
	}
	require.Equal(t, []string{"crd", "version", "field", "check", "severity", "message"}, keys)
	require.Len(t, table.Rows, 1)
	require.Equal(t, "error", table.Rows[0][4].String())
	require.Equal(t, []string{"... and 2 more findings for CRD a"}, table.Notes)
}
