package report

import (
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// This file names the git baselines a run compared with (--git-ref): the
// summary line names them all; where a run has several, every finding of
// the table, markdown, GitHub and SARIF outputs names its own; the json
// and SARIF outputs carry each finding's as data (`baseline`).

// shortCommit is how many hex digits name a baseline's commit in text.
const shortCommit = 7

// BaselineText names a baseline: "v1.2.0 (abc1234)" for the revision's
// own commit, "origin/main (merge base abc1234)" for the merge base of
// the revision and HEAD when the revision moved on since. A revision given
// as a commit hash (a pull request's base commit) is shortened like the
// commit: "abc1234", "abc1234 (merge base def5678)".
func BaselineText(b finding.Baseline) string {
	c := b.Commit[:min(shortCommit, len(b.Commit))]
	ref, isCommit := b.Ref, len(b.Ref) >= shortCommit && strings.Trim(strings.ToLower(b.Ref), "0123456789abcdef") == ""
	if isCommit {
		ref = strings.ToLower(ref[:shortCommit])
	}
	switch {
	case b.MergeBase:
		return ref + " (merge base " + c + ")"
	case isCommit:
		return ref
	}
	return ref + " (" + c + ")"
}

// baselinesText names the baselines of a run: "v1.1.0 (abc1234) and
// v1.2.0 (def5678)".
func baselinesText(bs []finding.Baseline) string {
	texts := make([]string, len(bs))
	for i, b := range bs {
		texts[i] = BaselineText(b)
	}
	if len(texts) <= 1 {
		return strings.Join(texts, "")
	}
	return strings.Join(texts[:len(texts)-1], ", ") + " and " + texts[len(texts)-1]
}

// SeveralBaselines reports whether findings come from more than one
// baseline: then every finding names its own.
func SeveralBaselines(findings []Finding) bool {
	var first *finding.Baseline
	for _, f := range findings {
		switch {
		case f.Baseline == nil:
		case first == nil:
			first = f.Baseline
		case *f.Baseline != *first:
			return true
		}
	}
	return false
}

// severalBaselines is SeveralBaselines of a report.
func (r Report) severalBaselines() bool { return len(r.Baselines) > 1 }

// baselineText is the finding's baseline in text, "" for none.
func (f Finding) baselineText() string {
	if f.Baseline == nil {
		return ""
	}
	return BaselineText(*f.Baseline)
}
