package finding

import (
	"fmt"
	"sync/atomic"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
)

// change is one unsafe change a check found, before the policy: where it
// is, which check found it, what it is, and the enforcement the check's
// configuration gives it (Strict or Warn; None is never emitted). Every
// check of the engine, the pair walks and the servedVersion pairs hand
// their changes to the policy in this one form.
type Draft struct {
	Version     string
	PairVersion string // servedVersion pairs: the second version
	Field       schemapath.Path
	Check       string
	Message     string // the check's statement of the change (Finding.ChangeText)
	// fact is the change as facts (Finding.Change): what the fingerprint
	// hashes, where message words it.
	Fact  Change
	Level config.Enforcement
	// dataLoss: the change loses whatever data is stored where it is
	// (a field removed, unknown fields no longer kept).
	DataLoss bool
	// clientFacing: the change breaks clients whatever stored objects hold.
	ClientFacing bool
	// remedy, when the check knows more than its generic remedy.
	Remedy *Remedy
	// since: the change is a finding only from this Kubernetes version on
	// (Finding.KubeVersionSince); zero when on every version.
	Since config.KubeVersion
	// object and cause: for an existingResources finding, the stored
	// object it is about, or the waived change it stands for.
	Object *ObjectFinding
	Cause  *Cause
}

// policy turns changes into findings: it applies the change's enforcement,
// the mode (error or warn) and exemptions, and bounds what a finding
// prints. Checks decide themselves whether they are enabled and which
// enforcement applies; unhandled changes are filtered by failMode in the
// pair run before they reach here.
type Policy struct {
	Settings *config.Settings
	CRD      string
	Findings []Finding
	ids      identities
}

// policiesMade counts the policies made (PoliciesMade).
var policiesMade atomic.Int64

// PoliciesMade is how many policies NewPolicy has made in this process: a
// measure of how many times a run enters the policy (the tests of the
// engine's one call per pair count it around one evaluation).
func PoliciesMade() int64 { return policiesMade.Load() }

// defaultSettings is what a nil *config.Settings means, resolved once.
var defaultSettings = config.Default()

// SettingsOf is cfg, or the defaults for a nil cfg: the one place that
// reads a nil cfg as the defaults.
func SettingsOf(cfg *config.Settings) *config.Settings {
	if cfg == nil {
		return &defaultSettings
	}
	return cfg
}

// NewPolicy is the policy of cfg (SettingsOf) for the named CRD: entered
// once per pair by the engine's one call (crdupgradesafety.Judge).
func NewPolicy(cfg *config.Settings, crd string) *Policy {
	policiesMade.Add(1)
	cfg = SettingsOf(cfg)
	return &Policy{Settings: cfg, CRD: crd}
}

// Sub is another list of findings of p's pair under p's settings, with
// ordinals of its own: what a reader keeps apart (the stored objects no
// finding explains, the objects already invalid) and joins later.
func (p *Policy) Sub() *Policy { return &Policy{Settings: p.Settings, CRD: p.CRD} }

// Add records a check's change as a finding, with the severity its check
// gives it: error only for a Strict change under mode error that, under
// alphaVersionEnforcement Warn, is not about an alpha version
// (alphaLenient); Warn changes are warnings whatever the mode. Waivers,
// acceptances and what the stored objects show are judged later, once
// (Apply, or Judged). Its fingerprint is computed here, from its facts,
// before the waivers are matched against it.
func (p *Policy) Add(c Draft) {
	sev := SeverityError
	if p.Settings.Mode == config.ModeWarn || c.Level == config.EnforcementWarn {
		sev = SeverityWarning
	}
	alpha := sev == SeverityError && alphaLenient(p.Settings, c)
	if alpha {
		sev = SeverityWarning
	}
	remedy := c.Remedy
	if remedy == nil {
		remedy = DefaultRemedy(c.Check, c.Version)
	}
	f := Finding{
		CRD: p.CRD, Version: c.Version, PairVersion: c.PairVersion, Field: c.Field,
		Check: c.Check, Severity: sev, ChangeText: BoundText(c.Message, MaxMessageBytes), Change: c.Fact,
		DataLoss: c.DataLoss || lossOf(c.Check) != LossNone, ClientFacing: c.ClientFacing, Remedy: remedy,
		Object: c.Object, Cause: c.Cause, AlphaLenient: alpha,
	}
	if c.Since != (config.KubeVersion{}) {
		f.KubeVersionSince = c.Since.String()
		f.KubeVersion = p.Settings.KubeVersion.String()
	}
	// The fingerprint hashes the whole facts; only what the finding
	// carries for display is bounded, after.
	p.ids.fingerprint(&f)
	f.Version, f.PairVersion = BoundText(c.Version, MaxFieldBytes), BoundText(c.PairVersion, MaxFieldBytes)
	f.Field = schemapath.Path(BoundText(string(c.Field), MaxFieldBytes))
	f.Change = Change{Kind: c.Fact.Kind, Old: BoundText(c.Fact.Old, MaxMessageBytes), New: BoundText(c.Fact.New, MaxMessageBytes)}
	// The severity so far is the check's (mode, enforcement, alpha): what
	// waivers, acceptances and the stored objects are judged from, once
	// (Apply, or Judged for findings that are not joined to objects).
	f.unwaived, f.unwaivedAlpha = f.Severity, f.AlphaLenient
	p.Findings = append(p.Findings, f)
	p.ids.key(&p.Findings[len(p.Findings)-1])
}

// Judged judges fs, findings of p's pair that no stored object is joined
// to, in place (waivers, acceptances), and returns them: the one stage a
// finding's severity is decided in when it does not go through Apply.
func (p *Policy) Judged(fs []Finding) []Finding {
	for i := range fs {
		JudgeFinal(p.Settings, &fs[i])
	}
	return fs
}

// judgeWaivers applies the waivers of cfg to f, from its facts as they
// stand (DataLoss above all): a waiver that may waive it makes it a
// warning; one that matches but may not (config.JudgeWaivers: a loss of
// stored data, a carried-over or disallowed annotation) is named as
// refused, an expired one as expired.
func judgeWaivers(cfg *config.Settings, f *Finding) {
	v := cfg.JudgeWaivers(WaiverSubject(f), f.DataLoss)
	switch {
	case v.Waiver != nil:
		f.Severity = SeverityWarning
		f.Waiver = boundWaiver(v.Waiver)
		f.AlphaLenient = false // the reviewed waiver is what waives it
	case v.Refused != nil:
		f.RefusedWaiver, f.WaiverRefusal = boundWaiver(v.Refused), v.Refusal
	case v.Expired != nil:
		f.ExpiredWaiver = boundWaiver(v.Expired)
	}
}

// Rejudge undoes what waivers and acceptances did to f, so that a finding
// judged already (a caller's, judged where it was made: Judged) is judged
// again from its final facts (Apply). A finding not made by a policy
// (unwaived unset) is left as it is.
func (f *Finding) Rejudge() {
	if f.unwaived == "" {
		return
	}
	f.Severity, f.AlphaLenient = f.unwaived, f.unwaivedAlpha
	f.Waiver, f.ExpiredWaiver, f.RefusedWaiver, f.WaiverRefusal = nil, nil, nil, ""
	f.Acceptance, f.ShortAcceptance, f.AcceptanceGap = nil, nil, ""
	if f.Remedy != nil && f.Remedy.Accept != nil {
		r := *f.Remedy
		r.Accept = nil
		f.Remedy = &r
	}
}

// JudgeFinal judges f's waivers and, for a loss of stored data, the
// acceptances of cfg, from its final facts: its DataLoss and the objects
// counted (Impact). An acceptance that covers the loss makes an error a
// warning; a loss that stays an error although a waiver or an acceptance
// named it gets the acceptDataLoss entry that would cover it in its
// remedy.
func JudgeFinal(cfg *config.Settings, f *Finding) {
	if f.unwaived == "" {
		return
	}
	judge(cfg, f)
}

// judge judges f's waivers and acceptances from its facts as they stand
// (JudgeFinal), keeping its severity before them (Rejudge). A finding of
// a pair is judged once, when the stored objects are joined (Apply).
func judge(cfg *config.Settings, f *Finding) {
	f.unwaived, f.unwaivedAlpha = f.Severity, f.AlphaLenient
	judgeWaivers(cfg, f)
	// An acceptance covers the finding it names whether or not the
	// objects read show a loss (accepting a loss accepts none); a
	// finding that loses data passes only through one.
	if f.Severity != SeverityError || f.Check == config.CheckAPIServerRejects {
		return
	}
	s := LossSubject(f, cfg.Live)
	a, gap := cfg.Accept(s)
	switch {
	case a != nil && gap == "":
		f.Severity, f.Acceptance = SeverityWarning, a
		f.AlphaLenient = false
		return
	case a != nil:
		f.ShortAcceptance, f.AcceptanceGap = a, gap
	}
	// Where a waiver was refused for the loss, or an acceptance named it
	// but fell short, the remedy names the acceptance that would cover
	// it: the act that accepts a loss.
	if f.DataLoss && f.Remedy != nil && (f.WaiverRefusal == config.RefusedDataLoss || f.ShortAcceptance != nil) {
		r := *f.Remedy
		r.Accept = &AcceptHint{CRD: s.CRD, Check: s.Check, Version: s.Version, Path: s.Path, Objects: s.Objects, Counted: s.Counted}
		f.Remedy = &r
	}
}

// LossSubject is what acceptances are matched against: the loss's CRD,
// check, version, schema path (or CRD field), and how many objects the
// run counted (an object finding: one; a finding with an impact: the
// objects it affects); live: the run reads a cluster.
func LossSubject(f *Finding, live bool) config.LossSubject {
	s := config.LossSubject{CRD: f.CRD, Check: f.Check, Version: f.Version, Path: WaiverSubject(f).Path, Live: live}
	switch {
	case f.Object != nil:
		s.Objects, s.Counted = 1, true
	case f.Impact != nil:
		s.Objects, s.Counted = f.Impact.Affected, true
	}
	return s
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
func (p *Policy) CRDLevel(level config.Enforcement, version, check string, fact Change, format string, args ...any) {
	p.CRDLevelWith(level, version, check, nil, fact, format, args...)
}

// crdLevelWith is crdLevel with a remedy more specific than the check's
// generic one.
func (p *Policy) CRDLevelWith(level config.Enforcement, version, check string, remedy *Remedy, fact Change, format string, args ...any) {
	if !level.Reports() {
		return
	}
	p.Add(Draft{Version: version, Check: check, Message: fmt.Sprintf(format, args...), Fact: fact, Level: level, Remedy: remedy})
}

// lossOf is the Loss of a check's findings, by its descriptor.
func lossOf(check string) Loss {
	if d := DescriptorOf(check); d != nil {
		return d.Loss
	}
	return LossNone
}

// boundWaiver is w, or a copy of it whose reason and owner are bounded as
// a message is.
func boundWaiver(w *config.Waiver) *config.Waiver {
	if len(w.Reason) <= MaxMessageBytes && len(w.Owner) <= MaxFieldBytes {
		return w
	}
	c := *w
	c.Reason, c.Owner = BoundText(c.Reason, MaxMessageBytes), BoundText(c.Owner, MaxFieldBytes)
	return &c
}

// KeyFindings sets the keys and fingerprints of findings made together
// outside a policy (identities).
func KeyFindings(fs []Finding) {
	var ids identities
	for i := range fs {
		ids.fingerprint(&fs[i])
		ids.key(&fs[i])
	}
}

// identities hands out the identities of findings made together (by one
// policy, or together outside one): the one place a fingerprint or a key
// is set. A fingerprint hashes a finding's facts (Fingerprint), with its
// ordinal among the findings of alike facts (a CEL rule given twice: the
// next one in the order they are made); a key names what the finding is
// about (findingKey), with its ordinal among those about the same.
type identities struct {
	fingerprints map[string]int // findings per Fingerprint(f, 0)
	keys         map[string]int // findings per findingKey(f, 0)
}

// fingerprint sets f's fingerprint from its facts as they stand (before
// what it carries for display is bounded).
func (ids *identities) fingerprint(f *Finding) {
	if ids.fingerprints == nil {
		ids.fingerprints = map[string]int{}
	}
	base := Fingerprint(f, 0)
	n := ids.fingerprints[base]
	ids.fingerprints[base]++
	f.Fingerprint = base
	if n > 0 {
		f.Fingerprint = Fingerprint(f, n)
	}
}

// key sets f's key (Finding.Key).
func (ids *identities) key(f *Finding) {
	if ids.keys == nil {
		ids.keys = map[string]int{}
	}
	base := findingKey(f, 0)
	f.key = findingKey(f, ids.keys[base])
	ids.keys[base]++
}
