package crdupgradesafety

import (
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// policy turns raw unsafe changes into findings: it applies exemptions and
// the mode (error or warn). Checks decide themselves whether they are
// enabled and which enforcement applies; unhandled changes are filtered by
// failMode in the pair run before they reach here.
type policy struct {
	cfg      *config.CRDUpgradeSafety
	crd      string
	findings []Finding
}

func (p *policy) add(version, field, check, message string) {
	sev := SeverityError
	if p.cfg.Mode == config.ModeWarn {
		sev = SeverityWarning
	}
	if exempt, reason := p.cfg.Exempt(p.crd, check); exempt {
		sev = SeverityWarning
		if reason != "" {
			message = fmt.Sprintf("%s (exempted: %s)", message, reason)
		} else {
			message += " (exempted)"
		}
	}
	p.findings = append(p.findings, Finding{
		CRD: p.crd, Version: version, Field: field, Check: check, Severity: sev, Message: message,
	})
}

// crdLevel adds a finding that concerns the whole CRD or one version of it.
func (p *policy) crdLevel(version, check, format string, args ...any) {
	p.add(version, "", check, fmt.Sprintf(format, args...))
}
