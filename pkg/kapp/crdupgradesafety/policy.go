package crdupgradesafety

import (
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
)

// change is one unsafe change a check found, before the policy: where it
// is, which check found it, what it is, and the enforcement the check's
// configuration gives it (Strict or Warn; None is never emitted). Every
// check of the engine, the pair walks and the servedVersion pairs hand
// their changes to the policy in this one form.
type change struct {
	version     string
	pairVersion string // servedVersion pairs: the second version
	field       schemapath.Path
	check       string
	message     string // the check's statement of the change (Finding.ChangeText)
	level       config.Enforcement
	// dataLoss: the change loses whatever data is stored where it is
	// (a field removed, unknown fields no longer kept).
	dataLoss bool
	// clientFacing: the change breaks clients whatever stored objects hold.
	clientFacing bool
	// remedy, when the check knows more than its generic remedy.
	remedy *Remedy
	// since: the change is a finding only from this Kubernetes version on
	// (Finding.KubeVersionSince); zero when on every version.
	since config.KubeVersion
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
	ordinals map[string]int // findings made per findingKey(f, 0)
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
// Strict change under mode error that no exemption waives and, under
// alphaVersionEnforcement Warn, that is not about an alpha version
// (alphaLenient); Warn changes are warnings whatever the mode.
func (p *policy) add(c change) {
	sev := SeverityError
	if p.cfg.Mode == config.ModeWarn || c.level == config.EnforcementWarn {
		sev = SeverityWarning
	}
	alpha := sev == SeverityError && alphaLenient(p.cfg, c)
	if alpha {
		sev = SeverityWarning
	}
	var exemption *Exemption
	if exempt, reason := p.cfg.Exempt(p.crd, c.check); exempt {
		sev = SeverityWarning
		exemption = &Exemption{Reason: boundText(reason, maxMessageBytes)}
		alpha = false // the reviewed exemption is what waives it
	}
	remedy := c.remedy
	if remedy == nil {
		remedy = defaultRemedy(c.check, c.version)
	}
	p.findings = append(p.findings, Finding{
		CRD: p.crd, Version: boundText(c.version, maxFieldBytes), PairVersion: boundText(c.pairVersion, maxFieldBytes),
		Field: schemapath.Path(boundText(string(c.field), maxFieldBytes)),
		Check: c.check, Severity: sev, ChangeText: boundText(c.message, maxMessageBytes),
		DataLoss: c.dataLoss || lossByCheck(c.check), ClientFacing: c.clientFacing, Exemption: exemption, Remedy: remedy,
		AlphaLenient: alpha,
	})
	if c.since != (config.KubeVersion{}) {
		p.findings[len(p.findings)-1].KubeVersionSince = c.since.String()
		p.findings[len(p.findings)-1].KubeVersion = p.cfg.KubeVersion.String()
	}
	f := &p.findings[len(p.findings)-1]
	if p.ordinals == nil {
		p.ordinals = map[string]int{}
	}
	base := findingKey(f, 0)
	f.key = findingKey(f, p.ordinals[base])
	p.ordinals[base]++
}

// crdLevel adds a finding that concerns the whole CRD or one version of
// it, at the given enforcement (Strict or Warn; None adds nothing).
func (p *policy) crdLevel(level config.Enforcement, version, check, format string, args ...any) {
	p.crdLevelWith(level, version, check, nil, format, args...)
}

// crdLevelWith is crdLevel with a remedy more specific than the check's
// generic one.
func (p *policy) crdLevelWith(level config.Enforcement, version, check string, remedy *Remedy, format string, args ...any) {
	if !level.Reports() {
		return
	}
	p.add(change{version: version, check: check, message: fmt.Sprintf(format, args...), level: level, remedy: remedy})
}

// lossByCheck tells whether every finding of check loses stored data:
// a CRD deleted (or replaced) with its objects, a stored version removed,
// a field removed, unknown fields no longer kept.
func lossByCheck(check string) bool {
	switch check {
	case config.CheckCRDDeletion, config.CheckStoredVersionRemoval, config.CheckExistingFieldRemoval,
		config.CheckPreserveUnknownFields:
		return true
	}
	return false
}
