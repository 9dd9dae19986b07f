package report

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"github.com/stretchr/testify/require"
)

// TestDeniedText: the findings of our own webhook's denial that a run does
// not report as errors are named by their line, else by their facts, with
// the webhook's fingerprint labelled and why each is listed (the run's own
// finding of the change, as a fact), at most MaxDeniedNamed of them.
func TestDeniedText(t *testing.T) {
	const crd = "widgets.example.com"
	facts := config.FindingFacts{Fingerprint: "ed63ac23ebcd", Check: config.CheckEnum, Version: "v1", Field: "^.spec.color"}
	const line = `crd widgets.example.com version v1 field ^.spec.color: [enum] enum values removed: ["blue"]`
	warning := func(f finding.Finding) *finding.Finding {
		f.Severity = finding.SeverityWarning
		return &f
	}
	cases := []struct {
		name   string
		denied finding.DeniedFinding
		want   string
	}{
		{name: "not found here", denied: finding.DeniedFinding{FindingFacts: facts, Line: line},
			want: line + " (webhook finding ed63ac23ebcd: an error under the webhook's settings; not found under this check's)"},
		{name: "past the lines: by its facts", denied: finding.DeniedFinding{FindingFacts: facts},
			want: "crd widgets.example.com version v1 field ^.spec.color: [enum] (webhook finding ed63ac23ebcd: an error under the webhook's settings; not found under this check's)"},
		{name: "a servedVersion pair by its facts", denied: finding.DeniedFinding{FindingFacts: config.FindingFacts{
			Fingerprint: "0123456789ab", Check: config.CheckServedVersion, Version: "v1", PairVersion: "v2", Field: "^.spec.a"}},
			want: "crd widgets.example.com version v1 -> v2 field ^.spec.a: [servedVersion] (webhook finding 0123456789ab: an error under the webhook's settings; not found under this check's)"},
		{name: "a bare fingerprint (a webhook before the facts)", denied: finding.DeniedFinding{FindingFacts: config.FindingFacts{Fingerprint: "ed63ac23ebcd"}},
			want: "crd widgets.example.com (webhook finding ed63ac23ebcd: an error under the webhook's settings; not found under this check's)"},
		{name: "a warning here by the mode or enforcement", denied: finding.DeniedFinding{FindingFacts: facts, Line: line, Here: warning(finding.Finding{})},
			want: line + " (webhook finding ed63ac23ebcd: an error under the webhook's settings; under this check's a warning)"},
		{name: "exempted here", denied: finding.DeniedFinding{FindingFacts: facts, Line: line,
			Here: warning(finding.Finding{Waiver: &config.Waiver{Reason: "PR 7"}})},
			want: line + " (webhook finding ed63ac23ebcd: an error under the webhook's settings; under this check's a warning, exempted: PR 7)"},
		{name: "unaffected and alpha here", denied: finding.DeniedFinding{FindingFacts: facts, Line: line,
			Here: warning(finding.Finding{Unaffected: true, AlphaLenient: true})},
			want: line + " (webhook finding ed63ac23ebcd: an error under the webhook's settings; under this check's a warning, " +
				"unaffectedEnforcement Warn (no stored object affected), alphaVersionEnforcement Warn (alpha version))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, deniedText(crd, []finding.DeniedFinding{tc.denied}))
		})
	}
	t.Run("bounded", func(t *testing.T) {
		var many []finding.DeniedFinding
		for i := range MaxDeniedNamed + 7 {
			many = append(many, finding.DeniedFinding{FindingFacts: config.FindingFacts{Fingerprint: fmt.Sprintf("%012x", i), Check: config.CheckType}})
		}
		text := deniedText(crd, many)
		require.Equal(t, MaxDeniedNamed, strings.Count(text, "webhook finding "))
		require.True(t, strings.HasSuffix(text, "; and 7 more findings of the webhook"), text)
	})
	t.Run("in the finding's message, after what the check says", func(t *testing.T) {
		f := finding.Finding{CRD: crd, Check: config.CheckAPIServerRejects, ChangeText: "the webhook denies",
			Denied: []finding.DeniedFinding{{FindingFacts: facts, Line: line}}}
		require.Equal(t, "the webhook denies: "+deniedText(crd, f.Denied), Message(f))
	})
}

// TestDenialCauses: every error finding of a denial is a cause with its
// facts; the first MaxDenialLines carry their line too (without the
// fingerprint, which the facts carry), the others their facts alone;
// warnings are none; a field is bounded.
func TestDenialCauses(t *testing.T) {
	long := "^.spec" + strings.Repeat(".deep", 100)
	var fs []finding.Finding
	for i := range MaxDenialLines + 2 {
		fs = append(fs, finding.Finding{CRD: "widgets.example.com", Version: "v1", Field: schemapath.Path(fmt.Sprintf("^.spec.f%02d", i)),
			Check: config.CheckType, Severity: finding.SeverityError, ChangeText: "type changed", Fingerprint: fmt.Sprintf("%012x", i)})
	}
	fs = append(fs,
		finding.Finding{CRD: "widgets.example.com", Check: config.CheckMapType, Severity: finding.SeverityWarning, Fingerprint: "ffffffffffff"},
		finding.Finding{CRD: "widgets.example.com", Version: "v1", Field: schemapath.Path(long), Check: config.CheckType,
			Severity: finding.SeverityError, Fingerprint: "eeeeeeeeeeee"})
	causes := DenialCauses(fs)
	require.Len(t, causes, MaxDenialLines+3, "one per error finding")
	for i, c := range causes {
		require.Equal(t, config.FindingCause, string(c.Type))
		facts := config.ParseFindingFacts(c.Field)
		require.Equal(t, config.CheckType, facts.Check)
		require.Equal(t, "v1", facts.Version)
		if i < MaxDenialLines {
			require.Equal(t, fs[i].Fingerprint, facts.Fingerprint)
			require.Equal(t, fs[i].Field.String(), facts.Field)
			require.Equal(t, "crd widgets.example.com version v1 field "+facts.Field+": [type] type changed", c.Message)
		} else {
			require.Empty(t, c.Message, "past the lines: its facts alone")
		}
	}
	last := config.ParseFindingFacts(causes[len(causes)-1].Field)
	require.Equal(t, "eeeeeeeeeeee", last.Fingerprint)
	require.Equal(t, MaxWarningRunes, utf8.RuneCountInString(last.Field))
	require.True(t, strings.HasPrefix(last.Field, "^.spec.deep"), last.Field)
}
