package crdupgradesafety

import (
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// change is one unsafe change a check found, before the policy: where it
// is, which check found it, what it is, and the enforcement the check's
// configuration gives it (Strict or Warn; None is never emitted). Every
// check of the engine, the pair walks and the servedVersion pairs hand
// their changes to the policy in this one form.
type change struct {
	version, field, check, message string
	level                          config.Enforcement
}

// policy turns changes into findings: it applies the change's enforcement,
// the mode (error or warn) and exemptions, and bounds what a finding
// prints. Checks decide themselves whether they are enabled and which
// enforcement applies; unhandled changes are filtered by failMode in the
// pair run before they reach here.
type policy struct {
	cfg      *config.Settings
	crd      string
	findings []Finding
}

// defaultSettings is what a nil *config.Settings means, resolved once.
var defaultSettings = config.Default()

// newPolicy is the policy of cfg for the named CRD. It is the one place
// that reads a nil cfg as the defaults.
func newPolicy(cfg *config.Settings, crd string) *policy {
	if cfg == nil {
		cfg = &defaultSettings
	}
	return &policy{cfg: cfg, crd: crd}
}

// add records a change as a finding. Its severity is error only for a
// Strict change under mode error that no exemption waives; Warn changes
// are warnings whatever the mode.
func (p *policy) add(c change) {
	sev := SeverityError
	if p.cfg.Mode == config.ModeWarn || c.level == config.EnforcementWarn {
		sev = SeverityWarning
	}
	message := boundText(c.message, maxMessageBytes)
	if exempt, reason := p.cfg.Exempt(p.crd, c.check); exempt {
		sev = SeverityWarning
		if reason != "" {
			message = fmt.Sprintf("%s (exempted: %s)", message, boundText(reason, maxMessageBytes))
		} else {
			message += " (exempted)"
		}
	}
	p.findings = append(p.findings, Finding{
		CRD: p.crd, Version: boundText(c.version, maxFieldBytes), Field: boundText(c.field, maxFieldBytes),
		Check: c.check, Severity: sev, Message: message,
	})
}

// crdLevel adds a finding that concerns the whole CRD or one version of
// it, at the given enforcement (Strict or Warn; None adds nothing).
func (p *policy) crdLevel(level config.Enforcement, version, check, format string, args ...any) {
	if !level.Reports() {
		return
	}
	p.add(change{version: version, check: check, message: fmt.Sprintf(format, args...), level: level})
}
