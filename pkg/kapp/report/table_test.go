package report

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/stretchr/testify/require"
)

func TestFindingLine(t *testing.T) {
	cases := []struct {
		f    finding.Finding
		want string
	}{
		{finding.Finding{CRD: "widgets.example.com", Version: "v1", Field: "^.spec.size", Check: "minimum",
			ChangeText: "minimum increased: 1 -> 5"},
			"crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5"},
		{finding.Finding{CRD: "widgets.example.com", Check: "scope", ChangeText: "scope changed: Namespaced -> Cluster"},
			"crd widgets.example.com: [scope] scope changed: Namespaced -> Cluster"},
		{finding.Finding{CRD: "widgets.example.com", Version: "v1beta1", Check: "servedVersionRemoval", ChangeText: "m"},
			"crd widgets.example.com version v1beta1: [servedVersionRemoval] m"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, FindingLine(tc.f))
	}
}

func TestOmitted(t *testing.T) {
	require.Equal(t, []string{
		"... and 1 more finding for CRD a.example.com",
		"... and 7 more findings for CRD b.example.com",
	}, OmittedLines(map[string]int{"b.example.com": 7, "a.example.com": 1, "c.example.com": 0}))
}

func TestFindingsTable(t *testing.T) {
	long := "rule added: " + strings.Repeat("self.a > 0 && ", 60) + "self.b\n  || self.c"
	findings := []finding.Finding{
		{CRD: "a", Version: "v1", Field: "^.x", Check: "type", Severity: finding.SeverityError, ChangeText: "m"},
		{CRD: "a", Version: "v1", Field: "^.y", Check: "celValidation", Severity: finding.SeverityError, ChangeText: long},
		// Two warnings the report's bound (2 per CRD) leaves out.
		{CRD: "a", Version: "v1", Field: "^.z", Check: "mapType", Severity: finding.SeverityWarning, ChangeText: "w"},
		{CRD: "a", Version: "v1", Field: "^.zz", Check: "mapType", Severity: finding.SeverityWarning, ChangeText: "w"},
	}
	bounded := New(nil, findings, 2, nil)

	t.Run("as kapp's --json renders it", func(t *testing.T) {
		table := FindingsTable(bounded, TableOptions{})
		var keys []string
		for _, h := range table.Header {
			keys = append(keys, h.Key)
		}
		require.Equal(t, []string{"crd", "version", "field", "check", "severity", "message", "remedy"}, keys)
		require.Len(t, table.Rows, 2)
		require.Equal(t, "error", table.Rows[0][4].String())
		require.Equal(t, long, table.Rows[1][5].String(), "in full")
		require.Equal(t, []string{"... and 2 more findings for CRD a"}, table.Notes)
		require.Equal(t, "findings", table.Content)
	})

	t.Run("for a person", func(t *testing.T) {
		table := FindingsTable(bounded, TableOptions{MaxMessage: 100, FullOutputs: "--output json"})
		require.Equal(t, "m", table.Rows[0][5].String())
		short := table.Rows[1][5].String()
		require.LessOrEqual(t, len([]rune(short)), 100)
		require.GreaterOrEqual(t, len([]rune(short)), 98)
		require.True(t, strings.HasPrefix(short, "rule added: self.a > 0 && "), short)
		require.True(t, strings.HasSuffix(short, "self.b || self.c"), short)
		require.Contains(t, short, " … ")
		require.Equal(t, []string{"... and 2 more findings for CRD a",
			"Messages longer than 100 characters are shortened (…); --output json print them in full."}, table.Notes)
		require.Empty(t, table.Content, "no row count: the summary line follows")
	})

	t.Run("nothing shortened, no note", func(t *testing.T) {
		table := FindingsTable(New(nil, findings[:1], 0, nil), TableOptions{MaxMessage: 100})
		require.Empty(t, table.Notes)
	})
}

func TestShortenMessage(t *testing.T) {
	cases := []struct {
		in, want string
		max      int
		cut      bool
	}{
		{"short", "short", 10, false},
		{"exactly10!", "exactly10!", 10, false},
		{"two\nlines\r\n  and\ttab", "two lines and tab", 40, false},
		{"kept  as  is", "kept  as  is", 40, false},
		{"0123456789abcdefghij", "012345 … ghij", 13, true},
		{"ünïcödé ünïcödé ünïcödé", "ünïcöd … ödé", 12, true},
	}
	for _, tc := range cases {
		got, cut := ShortenMessage(tc.in, tc.max)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, tc.cut, cut, tc.in)
	}
}
