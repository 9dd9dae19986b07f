package report

import (
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The kapp hook's outputs (pkg/kapp/preflight): the warning lines it prints
// and the error that blocks a deploy, both from one Report (bounded once,
// by New).

// DeployError is kapp's error for a deploy the check blocks: Err, the
// run's error (the evaluation's *UnsafeUpgradeError, which errors.Is and
// errors.As reach through Unwrap), followed by Lines. Its text is all a
// blocked deploy prints of the findings:
//
//	unsafe CRD upgrade: 2 error findings:
//	  crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5 [fp:1a2b3c4d5e6f]
//	    way forward: ...
//	  ... and 1 more finding for CRD widgets.example.com
type DeployError struct {
	Err    error
	Report Report
}

func (e *DeployError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	lines := e.Lines()
	if len(lines) > 0 {
		b.WriteString(":")
	}
	for _, l := range lines {
		b.WriteString("\n  ")
		b.WriteString(l)
	}
	return b.String()
}

func (e *DeployError) Unwrap() error { return e.Err }

// Lines are the error findings the report keeps, each with its way
// forward (Finding.ErrorLine), then the notes of what its per-CRD bound
// left out.
func (e *DeployError) Lines() []string {
	var lines []string
	for _, f := range e.Report.Ordered() {
		if f.Severity == string(finding.SeverityError) {
			lines = append(lines, f.ErrorLine())
		}
	}
	return append(lines, e.Report.omittedLines()...)
}

// WarningLines are the lines the kapp hook prints as warnings (each after
// "Warning: CRDUpgradeSafety: "): the warning findings r keeps
// (Finding.Text) and, when no finding is an error (DeployError lists them
// otherwise), the notes of what its per-CRD bound left out.
func (r Report) WarningLines() []string {
	var lines []string
	for _, f := range r.Ordered() {
		if f.Severity != string(finding.SeverityError) {
			lines = append(lines, f.Text())
		}
	}
	if _, errs, _ := r.Counts(); errs > 0 {
		return lines
	}
	return append(lines, r.omittedLines()...)
}
