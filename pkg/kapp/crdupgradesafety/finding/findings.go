package finding

import (
	"slices"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
)

// Severity of a finding after the policy (mode, failMode, waivers) is applied.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding is one unsafe (or unhandled) change, as facts. Every field is
// set where the finding is made; no code decides anything by reading its
// text. The English of every output is composed from these fields at the
// edge, by pkg/kapp/report (one function per output).
type Finding struct {
	CRD string
	// Version is the version the finding is about, "" for CRD-level
	// findings. For a servedVersion pair it is the first version of the
	// pair and PairVersion the second ("v1 -> v2" as outputs print it).
	Version     string
	PairVersion string
	// Field is the schema path the finding is about (the zero Path for
	// CRD- and version-level findings); CRDField, for apiserverRejects,
	// is a field of the CRD object itself as the apiserver names it
	// (spec.versions[0].name). At most one of them is set.
	Field    schemapath.Path
	CRDField string
	Check    string // a config.Check* ID
	Severity Severity
	// ChangeText is what changed, as the check states it, with old -> new
	// values ("maximum decreased: 20 -> 5"): the check's own words about
	// the schema, without data loss, impact, exemption or remedy, which
	// are fields of their own.
	ChangeText string
	// ReadError is, for a finding that stored objects could not be read,
	// the error the read failed with, in the words of the apiserver or of
	// the CRD's conversion webhook, which may quote stored data (outputs
	// print it after ChangeText; WithoutStoredValues drops it).
	ReadError string
	// Change is what changed as facts (the kind of change, old and new
	// values), set by the check: what the fingerprint hashes, where
	// ChangeText words it.
	Change Change
	// Fingerprint is the finding's stable identity (fingerprint.go):
	// FingerprintLen hex digits of a hash of its facts, the same across
	// reformatting, file moves, rewording and output order. Waivers name
	// it.
	Fingerprint string
	// DataLoss: the change loses stored data (pruned fields, a CRD
	// deleted or replaced, a stored version removed). Set where the
	// finding is made (and, once objects are read, from their impact).
	DataLoss bool
	// Impact: what the finding does to the stored objects read (a
	// cluster, or samples); nil when none were read.
	Impact *Impact
	// ClientFacing: the change breaks clients whatever the stored objects
	// hold (the keys server-side apply merges a list by), so no read of
	// objects can prove it harmless.
	ClientFacing bool
	// Unaffected: the finding was an error made a warning by
	// unaffectedEnforcement Warn, because it affects no stored object.
	Unaffected bool
	// AlphaLenient: the finding was an error made a warning by
	// alphaVersionEnforcement Warn, because it is about an alpha version
	// (IsAlphaVersion) and about its schema, not about data that exists.
	AlphaLenient bool
	// Waiver: the reviewed waiver (the settings' waivers or exemptions, or
	// the waiver annotations) that made this finding a warning; nil
	// otherwise.
	Waiver *config.Waiver
	// ExpiredWaiver: a waiver that matches the finding but expired, so it
	// no longer waives it; nil otherwise (and whenever Waiver is set).
	ExpiredWaiver *config.Waiver
	// StaleWaiver: for a staleWaiver finding, the waiver of a CRD of the
	// run that matches none of its findings.
	StaleWaiver *config.Waiver
	// RefusedWaiver: a waiver that matches the finding but may not waive
	// it, and WaiverRefusal why: the finding loses stored data (only an
	// acceptDataLoss entry accepts that), the waiver annotation was
	// carried over unchanged from the old CRD, or the settings'
	// annotationWaivers do not let annotations waive this check. nil
	// otherwise (and whenever Waiver is set).
	RefusedWaiver *config.Waiver
	WaiverRefusal config.WaiverRefusal
	// Acceptance: the acceptDataLoss entry of the settings that accepted
	// this loss of stored data, making the finding a warning; nil
	// otherwise.
	Acceptance *config.Acceptance
	// ShortAcceptance: an acceptDataLoss entry that names this loss but
	// does not cover it, and AcceptanceGap why (expired, more objects
	// than it allows, objects a live run could not count); nil otherwise.
	ShortAcceptance *config.Acceptance
	AcceptanceGap   config.AcceptanceGap
	// Cause: for an existingResources finding that stands for the stored
	// objects an exempted change affects, that change.
	Cause *Cause
	// Object: for an existingResources finding about one stored object
	// (an effect no other finding explains), what happens to it.
	Object *ObjectFinding
	// Denied: for the apiserverRejects finding of a denial by the
	// CRDUpgradeSafety admission webhook (DeniedByWebhook), the findings
	// of the denial this run does not report as errors itself.
	Denied []DeniedFinding
	// Remedy is the safe way forward; set on every finding of a check
	// that has one (every error finding has one).
	Remedy *Remedy
	// KubeVersionSince: the verdict depends on the Kubernetes version:
	// the apiserver rejects what the finding is about from this version
	// on ("1.37"; older ones accept it), and KubeVersion is the version
	// judged for (the cluster's, or --kube-version). Both "" where the
	// verdict is the same on every supported version.
	KubeVersionSince string
	KubeVersion      string
	// Baseline: the git commit the old CRD was read at, when the command
	// compares with git revisions (--git-ref); nil otherwise.
	Baseline *Baseline
	// Ordering: for a conversionOrdering finding, the webhook's Service,
	// the workloads that serve it and the kapp change group and
	// annotations that order them before the CRD; for a conversionWebhook
	// finding of kind applyTime, the same facts with the workloads that
	// ship the new code and the admission webhook that judges it; nil
	// otherwise.
	Ordering *ConversionOrdering

	// key identifies the finding from where it is made: what a reader's
	// impact is joined back by (ApplyImpacts).
	key string
	// unwaived and unwaivedAlpha are Severity and AlphaLenient before any
	// waiver or acceptance: what ApplyImpacts judges them again from, once
	// the stored objects tell whether the finding loses data.
	unwaived      Severity
	unwaivedAlpha bool
}

// Cause is the change an existingResources finding stands for.
type Cause struct {
	Check string
	Field schemapath.Path
	// Fingerprint is the waived change's fingerprint.
	Fingerprint string
}

// DeniedFinding is one error finding of a denial by the CRDUpgradeSafety
// admission webhook, as the denial carries it (config.FindingCause): its
// facts (fingerprint, check, version, field), its line ("" for one past
// the lines the denial lists), and what this run has of it.
type DeniedFinding struct {
	config.FindingFacts
	Line string
	// Here is this run's finding of the same change, a warning here (the
	// two settings differ); nil when this run has none.
	Here *Finding
}

// ObjectFinding is what happens to one stored object under the new CRD
// where no finding about the schema explains it.
type ObjectFinding struct {
	Source string // SourceCluster or SourceSamples
	Kind   string // the objects' kind, "Widget"
	Name   string // namespace/name, or name
	Effect Effect
	// Fields are the fields affected with their values ("spec.color: \"red\""
	// as Field and Value).
	Fields     []ObjectEffect
	MoreFields int // how many more fields than Fields
	// Ratchets: for a rejected cluster object, updates that leave its
	// invalid fields alone still pass (validation ratcheting).
	Ratchets bool
	// AlreadyInvalid: the old CRD already rejects the object at Fields,
	// and the new one still does: a note, not an effect of the update.
	AlreadyInvalid bool
}

// HasErrors reports whether any finding has severity error.
func HasErrors(findings []Finding) bool {
	for _, f := range findings {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Bound keeps at most maxPerCRD findings per CRD (0 keeps all) and returns
// how many were left out per CRD name. Of a CRD with more, it keeps first
// the findings that lose data or affect stored objects read, then the other
// errors, then the rest, each in the order given; what it keeps stays in the
// order given (SortFindings: data loss first).
func Bound(findings []Finding, maxPerCRD int) (kept []Finding, omitted map[string]int) {
	omitted = map[string]int{}
	if maxPerCRD <= 0 {
		return findings, omitted
	}
	byCRD := map[string][]int{}
	for i, f := range findings {
		byCRD[f.CRD] = append(byCRD[f.CRD], i)
	}
	drop := map[int]bool{}
	for crd, idxs := range byCRD {
		if len(idxs) <= maxPerCRD {
			continue
		}
		ranked := slices.Clone(idxs)
		slices.SortStableFunc(ranked, func(a, b int) int { return boundRank(findings[a]) - boundRank(findings[b]) })
		for _, i := range ranked[maxPerCRD:] {
			drop[i] = true
		}
		omitted[crd] = len(idxs) - maxPerCRD
	}
	kept = make([]Finding, 0, len(findings)-len(drop))
	for i, f := range findings {
		if !drop[i] {
			kept = append(kept, f)
		}
	}
	return kept, omitted
}

// boundRank is what Bound keeps first (lowest): 0 for a finding that loses
// data or affects stored objects read (an object finding included, but not
// a note on an object the old CRD already rejects), 1 for another error, 2
// for the rest.
func boundRank(f Finding) int {
	switch {
	case f.DataLoss, f.Impact != nil && f.Impact.Affected > 0, f.Object != nil && !f.Object.AlreadyInvalid:
		return 0
	case f.Severity == SeverityError:
		return 1
	}
	return 2
}

// SortFindings sorts findings that lose stored data first, then by CRD,
// version (and pair), field, check, change and severity: the one stable order of
// every output, for one CRD or combined results of several CRDs and of the
// live checks.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		switch {
		case a.DataLoss != b.DataLoss:
			return a.DataLoss
		case a.CRD != b.CRD:
			return a.CRD < b.CRD
		case a.Version != b.Version:
			return a.Version < b.Version
		case a.PairVersion != b.PairVersion:
			return a.PairVersion < b.PairVersion
		case a.Field != b.Field:
			return a.Field < b.Field
		case a.CRDField != b.CRDField:
			return a.CRDField < b.CRDField
		case a.Check != b.Check:
			return a.Check < b.Check
		case a.ChangeText < b.ChangeText, b.ChangeText < a.ChangeText:
			// Only to order findings of one check at one field
			// deterministically: an order, no identity
			// (TestNoDecisionReadsText allows the read here).
			return a.ChangeText < b.ChangeText
		case a.Object != nil && b.Object != nil && a.Object.Name != b.Object.Name:
			return a.Object.Name < b.Object.Name
		default:
			return a.Severity < b.Severity
		}
	})
}

// StaleWaivers returns a staleWaiver warning for each waiver of cfg that
// names one of the CRDs evaluated (crds) and matches none of their
// findings (expired matches count: those findings say the waiver
// expired; apiserverRejects findings do not, they cannot be waived). A
// waiver of a CRD the run did not evaluate, or one by
// fingerprint alone, cannot be judged: the run does not know its CRD's
// findings. findings are all the run's findings.
func StaleWaivers(cfg *config.Settings, crds []string, findings []Finding) []Finding {
	cfg = SettingsOf(cfg)
	if len(cfg.Waivers) == 0 {
		return nil
	}
	evaluated := make(map[string]bool, len(crds))
	for _, c := range crds {
		evaluated[c] = true
	}
	var out []Finding
	var ids identities
	for i := range cfg.Waivers {
		w := &cfg.Waivers[i]
		// apiserverRejects findings are never waived: a waiver naming one
		// waives nothing, and is stale.
		if !evaluated[w.CRD] || slices.ContainsFunc(findings, func(f Finding) bool {
			return f.Check != config.CheckAPIServerRejects && w.Matches(WaiverSubject(&f))
		}) {
			continue
		}
		f := Finding{CRD: w.CRD, Check: config.CheckStaleWaiver, Severity: SeverityWarning, StaleWaiver: w,
			Change: Change{Kind: string(w.Source), Old: w.Fingerprint, New: strings.Join(w.Checks, ",") + " " + w.Path},
			Remedy: DefaultRemedy(config.CheckStaleWaiver, "")}
		ids.fingerprint(&f)
		out = append(out, f)
	}
	return out
}

// Key identifies f by what it is about, set where it is made: what the
// impact of the stored objects read is joined back to it by (VersionImpact).
func (f *Finding) Key() string { return f.key }
