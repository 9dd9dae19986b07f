package evaluation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/report"
)

// ErrUnsafeUpgrade is matched (errors.Is) by the error of a run in which a
// CRD change has an error finding (*UnsafeUpgradeError), whichever front-end
// returns it.
var ErrUnsafeUpgrade = errors.New("unsafe CRD upgrade")

// UnsafeUpgradeError is the error of a run with error findings (see
// Result.Err and Result.ErrListed). It unwraps to ErrUnsafeUpgrade. The
// tools command maps it to its exit status 3; the kapp hook returns it as
// the deploy's error.
type UnsafeUpgradeError struct {
	// Findings are all error findings, sorted.
	Findings []finding.Finding
	// Warnings is how many warning findings the run had besides.
	Warnings int
	// Lines, when set, are the rendered error findings kept by the per-CRD
	// bound, followed by the "... and N more findings" notes: the error's
	// text lists them after the count.
	Lines []string
}

func (e *UnsafeUpgradeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d error %s", ErrUnsafeUpgrade, len(e.Findings), plural.Of(len(e.Findings), "finding", "findings"))
	if len(e.Lines) > 0 {
		b.WriteString(":")
	}
	for _, l := range e.Lines {
		b.WriteString("\n  ")
		b.WriteString(l)
	}
	return b.String()
}

func (e *UnsafeUpgradeError) Unwrap() error { return ErrUnsafeUpgrade }

// newUnsafeUpgradeError returns the error of findings, nil when none is an
// error.
func newUnsafeUpgradeError(findings []finding.Finding) *UnsafeUpgradeError {
	e := &UnsafeUpgradeError{}
	for _, f := range findings {
		if f.Severity == finding.SeverityError {
			e.Findings = append(e.Findings, f)
		} else {
			e.Warnings++
		}
	}
	if len(e.Findings) == 0 {
		return nil
	}
	return e
}

// listBounded sets Lines: the error findings among those of all that the
// per-CRD bound maxPerCRD keeps, then the bound's notes.
func (e *UnsafeUpgradeError) listBounded(all []finding.Finding, maxPerCRD int) {
	kept, omitted := finding.Bound(all, maxPerCRD)
	for _, f := range kept {
		if f.Severity == finding.SeverityError {
			e.Lines = append(e.Lines, report.ErrorLine(f))
		}
	}
	e.Lines = append(e.Lines, report.OmittedLines(omitted)...)
}
