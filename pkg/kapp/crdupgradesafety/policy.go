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
	// fact is the change as facts (Finding.Change): what the fingerprint
	// hashes, where message words it.
	fact  Change
	level config.Enforcement
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
	// object and cause: for an existingResources finding, the stored
	// object it is about, or the waived change it stands for.
	object *ObjectFinding
	cause  *Cause
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
	// fingerprints counts the findings made per fingerprint(f, 0).
	fingerprints map[string]int
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
// Strict change under mode error that no waiver waives and, under
// alphaVersionEnforcement Warn, that is not about an alpha version
// (alphaLenient); Warn changes are warnings whatever the mode. Its
// fingerprint is computed here, from its facts, before the waivers are
// matched against it.
func (p *policy) add(c change) {
	sev := SeverityError
	if p.cfg.Mode == config.ModeWarn || c.level == config.EnforcementWarn {
		sev = SeverityWarning
	}
	alpha := sev == SeverityError && alphaLenient(p.cfg, c)
	if alpha {
		sev = SeverityWarning
	}
	remedy := c.remedy
	if remedy == nil {
		remedy = defaultRemedy(c.check, c.version)
	}
	p.findings = append(p.findings, Finding{
		CRD: p.crd, Version: boundText(c.version, maxFieldBytes), PairVersion: boundText(c.pairVersion, maxFieldBytes),
		Field: schemapath.Path(boundText(string(c.field), maxFieldBytes)),
		Check: c.check, Severity: sev, ChangeText: boundText(c.message, maxMessageBytes),
		Change:   Change{Kind: c.fact.Kind, Old: boundText(c.fact.Old, maxMessageBytes), New: boundText(c.fact.New, maxMessageBytes)},
		DataLoss: c.dataLoss || lossByCheck(c.check), ClientFacing: c.clientFacing, Remedy: remedy,
		Object: c.object, Cause: c.cause, AlphaLenient: alpha,
	})
	f := &p.findings[len(p.findings)-1]
	if c.since != (config.KubeVersion{}) {
		f.KubeVersionSince = c.since.String()
		f.KubeVersion = p.cfg.KubeVersion.String()
	}
	f.Fingerprint = fingerprint(f, 0)
	if p.fingerprints == nil {
		p.fingerprints = map[string]int{}
	}
	if n := p.fingerprints[f.Fingerprint]; n > 0 {
		// Facts alike (a CEL rule given twice): the next one in the
		// order the checks make them.
		p.fingerprints[f.Fingerprint]++
		f.Fingerprint = fingerprint(f, n)
	} else {
		p.fingerprints[f.Fingerprint] = 1
	}
	if w, expired := p.cfg.Waive(WaiverSubject(f)); expired {
		f.ExpiredWaiver = boundWaiver(w)
	} else if w != nil {
		f.Severity = SeverityWarning
		f.Waiver = boundWaiver(w)
		f.AlphaLenient = false // the reviewed waiver is what waives it
	}
	if p.ordinals == nil {
		p.ordinals = map[string]int{}
	}
	base := findingKey(f, 0)
	f.key = findingKey(f, p.ordinals[base])
	p.ordinals[base]++
}

// WaiverSubject is what waivers are matched against: the finding's CRD,
// check, schema path (or CRD field) and fingerprint.
func WaiverSubject(f *Finding) config.WaiverSubject {
	path := f.Field.String()
	if path == "" {
		path = f.CRDField
	}
	return config.WaiverSubject{CRD: f.CRD, Check: f.Check, Path: path, Fingerprint: f.Fingerprint}
}

// crdLevel adds a finding that concerns the whole CRD or one version of
// it, at the given enforcement (Strict or Warn; None adds nothing), with
// the change as facts (fact) and as the check words it (format, args).
func (p *policy) crdLevel(level config.Enforcement, version, check string, fact Change, format string, args ...any) {
	p.crdLevelWith(level, version, check, nil, fact, format, args...)
}

// crdLevelWith is crdLevel with a remedy more specific than the check's
// generic one.
func (p *policy) crdLevelWith(level config.Enforcement, version, check string, remedy *Remedy, fact Change, format string, args ...any) {
	if !level.Reports() {
		return
	}
	p.add(change{version: version, check: check, message: fmt.Sprintf(format, args...), fact: fact, level: level, remedy: remedy})
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

// boundWaiver is w, or a copy of it whose reason and owner are bounded as
// a message is.
func boundWaiver(w *config.Waiver) *config.Waiver {
	if len(w.Reason) <= maxMessageBytes && len(w.Owner) <= maxFieldBytes {
		return w
	}
	c := *w
	c.Reason, c.Owner = boundText(c.Reason, maxMessageBytes), boundText(c.Owner, maxFieldBytes)
	return &c
}
