package tools

import (
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
)

// The exit statuses of `kapp tools crd-upgrade-safety` (its help text):
// 0 no error findings, 1 the check could not run (any other error), 3
// UnsafeExitStatus.

// UnsafeExitStatus is the exit status when a CRD change has an error finding.
const UnsafeExitStatus = 3

// exitStatusError gives err, an *evaluation.UnsafeUpgradeError, the exit
// status UnsafeExitStatus (kapp's cmd/app.ExitStatus). Its text is err's.
type exitStatusError struct {
	err    error
	status int
}

func (e exitStatusError) Error() string   { return e.err.Error() }
func (e exitStatusError) Unwrap() error   { return e.err }
func (e exitStatusError) ExitStatus() int { return e.status }

// exitStatusOf is the outcome of a run whose reports are printed: nil
// without error findings, else the unsafe-upgrade error with exit status
// UnsafeExitStatus.
func exitStatusOf(findings []finding.Finding) error {
	if err := (evaluation.Result{Findings: findings}).Err(); err != nil {
		return exitStatusError{err: err, status: UnsafeExitStatus}
	}
	return nil
}
