package config_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailDecisionFor: the one resolver of failMode, per situation, with
// the per-comparison unhandledFailureMode counting for unhandled changes
// only.
func TestFailDecisionFor(t *testing.T) {
	open, closed := config.FailModeOpen, config.FailModeClosed
	for _, tc := range []struct {
		name      string
		failMode  config.FailMode
		unhandled config.FailMode // the comparison's unhandledFailureMode
		situation config.FailSituation
		noChecks  bool // vc nil
		wantMode  config.FailMode
		want      config.FailDecision
	}{
		{"unhandled change, closed", closed, "", config.FailUnhandledChange, false, closed, config.FailBlock},
		{"unhandled change, open", open, "", config.FailUnhandledChange, false, open, config.FailIgnore},
		{"unhandledFailureMode open overrides closed", closed, open, config.FailUnhandledChange, false, open, config.FailIgnore},
		{"unhandledFailureMode closed overrides open", open, closed, config.FailUnhandledChange, false, closed, config.FailBlock},
		{"no comparison checks: failMode", open, "", config.FailUnhandledChange, true, open, config.FailIgnore},
		{"unreadable objects, closed", closed, "", config.FailUnreadableObjects, false, closed, config.FailBlock},
		{"unreadable objects, open", open, "", config.FailUnreadableObjects, false, open, config.FailWarn},
		{"unreadable objects ignore unhandledFailureMode", closed, open, config.FailUnreadableObjects, false, closed, config.FailBlock},
		{"ownerReferences unread, closed", closed, "", config.FailOwnerReferencesUnread, true, closed, config.FailBlock},
		{"ownerReferences unread, open", open, "", config.FailOwnerReferencesUnread, true, open, config.FailWarn},
		{"unproven trim, closed", closed, "", config.FailUnprovenStoredVersionsTrim, true, closed, config.FailBlock},
		{"unproven trim, open (CompareStatus's warning)", open, "", config.FailUnprovenStoredVersionsTrim, true, open, config.FailWarn},
		{"conversion unverified, closed", closed, "", config.FailConversionUnverified, true, closed, config.FailBlock},
		{"conversion unverified, open", open, "", config.FailConversionUnverified, true, open, config.FailWarn},
		{"webhook review unfinished, closed", closed, "", config.FailWebhookReviewUnfinished, true, closed, config.FailBlock},
		{"webhook review unfinished, open", open, "", config.FailWebhookReviewUnfinished, true, open, config.FailWarn},
		{"run unfinished, closed", closed, "", config.FailRunUnfinished, true, closed, config.FailBlock},
		{"run unfinished, open: fails all the same", open, "", config.FailRunUnfinished, true, open, config.FailBlock},
		{"empty failMode is closed", "", "", config.FailUnreadableObjects, true, "", config.FailBlock},
		{"an unknown situation blocks", open, "", config.FailSituation("somethingNew"), true, open, config.FailBlock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.FailMode = tc.failMode
			vc := &cfg.Checks.SameVersion
			vc.UnhandledFailureMode = tc.unhandled
			if tc.noChecks {
				vc = nil
			}
			got := cfg.FailDecisionFor(tc.situation, vc)
			assert.Equal(t, config.FailOutcome{Situation: tc.situation, Mode: tc.wantMode, Decision: tc.want}, got)
		})
	}
}

func TestFailDecisionEnforcement(t *testing.T) {
	assert.Equal(t, config.EnforcementStrict, config.FailBlock.Enforcement())
	assert.Equal(t, config.EnforcementWarn, config.FailWarn.Enforcement())
	assert.Equal(t, config.EnforcementNone, config.FailIgnore.Enforcement())
}

// TestFailModeTableIsTheResolver: the failMode table of docs/config.md has
// one row per FailSituation (its first column names it), no other row, in
// the order of FailSituations, and each row's closed and open columns
// start with the decision FailDecisionFor makes (error, warning, none). A
// situation added without a row, or a row that says what the code does
// not do, fails.
func TestFailModeTableIsTheResolver(t *testing.T) {
	rows := failModeTable(t, "../../../docs/config.md")
	var named []config.FailSituation
	for _, r := range rows {
		named = append(named, r.situation)
	}
	require.Equal(t, config.FailSituations, named, "the rows of the failMode table in docs/config.md")
	for _, r := range rows {
		for _, mode := range []config.FailMode{config.FailModeClosed, config.FailModeOpen} {
			cfg := config.Default()
			cfg.FailMode = mode
			want := cfg.FailDecisionFor(r.situation, nil).Decision
			assert.Equal(t, want, r.decisions[mode], "docs/config.md, failMode table, row %s, column %s", r.situation, mode)
		}
	}
}

func TestFailSituationsAreEveryConstant(t *testing.T) {
	// Every FailSituation constant of failmode.go is listed (so the table
	// test above sees it).
	src, err := os.ReadFile("failmode.go")
	require.NoError(t, err)
	var consts []config.FailSituation
	for _, m := range regexp.MustCompile(`(?m)^\t\w+ FailSituation = "(\w+)"$`).FindAllStringSubmatch(string(src), -1) {
		consts = append(consts, config.FailSituation(m[1]))
	}
	require.NotEmpty(t, consts)
	assert.ElementsMatch(t, consts, config.FailSituations)
	sorted := slices.Clone(config.FailSituations)
	slices.Sort(sorted)
	assert.Len(t, slices.Compact(sorted), len(config.FailSituations), "no situation twice")
}

type failModeRow struct {
	situation config.FailSituation
	decisions map[config.FailMode]config.FailDecision
}

// failModeTable reads the table of the `failMode` section of a document:
// rows `| `situation` | description | closed | open |`, the closed and
// open cells starting with the decision followed by a colon.
func failModeTable(t *testing.T, path string) []failModeRow {
	t.Helper()
	bs, err := os.ReadFile(path)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(bs), "\n### `failMode`\n")
	require.True(t, ok, "a failMode section in %s", path)
	section, _, _ = strings.Cut(section, "\n#")
	var header []string
	var rows []failModeRow
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if header != nil {
				break // the table ended
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil:
			header = cells
			require.Equal(t, []string{"situation", "when", "`closed`", "`open`"}, header, "the failMode table's columns")
			continue
		case strings.HasPrefix(cells[0], "---"):
			continue
		}
		require.Len(t, cells, 4, "row %q", line)
		row := failModeRow{situation: config.FailSituation(strings.Trim(cells[0], "`")), decisions: map[config.FailMode]config.FailDecision{}}
		for i, mode := range []config.FailMode{config.FailModeClosed, config.FailModeOpen} {
			word, _, ok := strings.Cut(cells[2+i], ":")
			require.True(t, ok, "row %s, column %s: starts with error:, warning: or none:", row.situation, mode)
			row.decisions[mode] = config.FailDecision(strings.Trim(word, "*"))
		}
		rows = append(rows, row)
	}
	require.NotEmpty(t, rows, "the failMode table in %s", path)
	return rows
}
