package evaluation

import (
	"errors"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// ErrUnsafeUpgrade is matched (errors.Is) by the error of a run in which a
// CRD change has an error finding (*UnsafeUpgradeError), whichever front-end
// returns it.
var ErrUnsafeUpgrade = errors.New("unsafe CRD upgrade")

// UnsafeUpgradeError is the error of a run with error findings
// (Result.Err): facts only. It unwraps to ErrUnsafeUpgrade; its text is
// their count. The tools command maps it to its exit status 3; the kapp
// hook wraps it in report.DeployError, which lists the findings as
// report composes them.
type UnsafeUpgradeError struct {
	// Findings are all error findings, sorted.
	Findings []finding.Finding
	// Warnings is how many warning findings the run had besides.
	Warnings int
	// Omitted is how many findings (errors and warnings) of each CRD the
	// per-CRD bound (maxFindingsPerCRD, finding.Bound) leaves
	// out of the outputs; CRDs it leaves nothing out of are not in it.
	Omitted map[string]int
}

func (e *UnsafeUpgradeError) Error() string {
	return fmt.Sprintf("%s: %d error %s", ErrUnsafeUpgrade, len(e.Findings), plural.Of(len(e.Findings), "finding", "findings"))
}

func (e *UnsafeUpgradeError) Unwrap() error { return ErrUnsafeUpgrade }

// newUnsafeUpgradeError returns the error of findings (all of a run's,
// sorted) under the per-CRD bound maxPerCRD, nil when none is an error.
func newUnsafeUpgradeError(findings []finding.Finding, maxPerCRD int) *UnsafeUpgradeError {
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
	_, omitted := finding.Bound(findings, maxPerCRD)
	for crd, n := range omitted {
		if n > 0 {
			if e.Omitted == nil {
				e.Omitted = map[string]int{}
			}
			e.Omitted[crd] = n
		}
	}
	return e
}
