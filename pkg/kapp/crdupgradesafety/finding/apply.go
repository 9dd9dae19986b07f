package finding

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// VersionImpact is what an ObjectReader learnt of the objects of one
// version: ApplyImpacts joins it to the findings.
type VersionImpact struct {
	Version  string
	Source   string
	Kind     string
	Read     int
	Affected int
	Impacts  map[string]*Impact // by Finding.key
	Residual []Finding
	Notes    []Finding // objects already invalid under the old CRD
}

// Objects is how many objects were read.
func (v VersionImpact) Objects() int { return v.Read }

// findingKey identifies a finding by what it is about: its CRD, version
// (and pair), field, check, and its ordinal among the findings of the same
// run with those (two CEL rules changed at one field). Set where the
// finding is made, it is the key a reader's impact is joined back by,
// whatever happens to the finding's words in between.
func findingKey(f *Finding, ordinal int) string {
	return strings.Join([]string{f.CRD, f.Version, f.PairVersion, string(f.Field), f.CRDField, f.Check, strconv.Itoa(ordinal)}, "\x00")
}

// ApplyImpacts joins what the objects' reads found (impacts, one per
// version read) to the findings of one CRD, and returns them sorted:
//
//   - every finding at a field of a version read gets its Impact, and its
//     remedy names the objects affected;
//   - a finding about an alpha version made a warning under
//     alphaVersionEnforcement Warn is an error again where its read found
//     stored data pruned;
//   - under unaffectedEnforcement Warn, a finding proven to affect no
//     object becomes a warning (Unaffected) where the read sees the whole
//     risk (unaffectedApplies);
//   - effects no finding explains are existingResources findings, and so
//     are objects the old CRD already rejects (notes: warnings);
//   - a finding with an impact loses stored data where its read found data
//     pruned (and always for crdDeletion and storedVersionRemoval); one
//     without keeps the DataLoss its check gave it. Data loss sorts first
//     (SortFindings).
func ApplyImpacts(findings []Finding, impacts []VersionImpact, cfg *config.Settings) []Finding {
	return (&Policy{Settings: SettingsOf(cfg)}).Apply(findings, impacts)
}

// Apply is ApplyImpacts under p's settings, for p's pair: the findings an
// exempted change's objects still make (exemptedButAffecting) are lists of
// p (Sub).
func (p *Policy) Apply(findings []Finding, impacts []VersionImpact) []Finding {
	cfg := p.Settings
	byVersion := map[string]*VersionImpact{}
	for i := range impacts {
		byVersion[impacts[i].Version] = &impacts[i]
	}
	out := make([]Finding, 0, len(findings))
	for _, f := range findings {
		f.Rejudge()
		// The conversion probe's findings carry their own impact (the
		// objects through the new conversion, not the read of a version).
		if vi := byVersion[f.Version]; vi != nil && f.Field != "" && f.PairVersion == "" && f.Check != config.CheckConversionWebhook {
			imp := vi.Impacts[f.key]
			if imp == nil {
				imp = &Impact{Source: vi.Source, Kind: vi.Kind, Objects: vi.Read}
			}
			imp.VersionAffected = vi.Affected
			f.Impact = imp
			f.Remedy = f.Remedy.WithObjects(imp)
			if f.AlphaLenient && imp.has(EffectPruned) {
				// Stored objects are real data, alpha or not.
				f.Severity, f.AlphaLenient = SeverityError, false
			}
			if imp.Affected == 0 && f.Severity == SeverityError && cfg.UnaffectedEnforcement == config.EnforcementWarn && unaffectedApplies(f) {
				f.Severity = SeverityWarning
				f.Unaffected = true
			}
			f.DataLoss = lossOf(f.Check) == LossAlways || imp.has(EffectPruned)
			JudgeFinal(cfg, &f)
			if f.Waiver != nil || f.Acceptance != nil {
				// What passed it is the reviewed waiver or acceptance.
				f.Unaffected = false
			}
			out = append(out, p.exemptedButAffecting(f)...)
		} else {
			JudgeFinal(cfg, &f)
		}
		out = append(out, f)
	}
	for _, vi := range impacts {
		for _, f := range vi.Residual {
			if f.Impact != nil {
				f.Impact.VersionAffected = vi.Affected
			}
			f.Rejudge()
			JudgeFinal(cfg, &f)
			out = append(out, f)
		}
		out = append(out, p.Judged(slices.Clone(vi.Notes))...)
	}
	SortFindings(out)
	return out
}

// has tells whether any object read has effect e.
func (imp *Impact) has(e Effect) bool {
	for _, ec := range imp.Effects {
		if ec.Effect == e {
			return true
		}
	}
	return false
}

// exemptedButAffecting: a waiver reviewed the change, not the stored
// objects it turns out to affect. Those stay an existingResources finding,
// as they were before the objects were joined to the findings: waived only
// where a waiver matches that finding too (existingResources waived).
func (pol *Policy) exemptedButAffecting(f Finding) []Finding {
	if f.Impact.Affected == 0 || f.Waiver == nil {
		return nil
	}
	cfg := pol.Settings
	p := pol.Sub()
	p.CRD = f.CRD
	p.Add(Draft{Version: f.Version, Check: config.CheckExistingResources, Level: config.EnforcementStrict,
		Cause:   &Cause{Check: f.Check, Field: f.Field, Fingerprint: f.Fingerprint},
		Message: fmt.Sprintf("the exempted %s change at %s affects %s objects", f.Check, f.Field, SourceNoun(f.Impact.Source))})
	for i := range p.Findings {
		p.Findings[i].Impact = f.Impact
		p.Findings[i].DataLoss = f.DataLoss
		p.Findings[i].Remedy = p.Findings[i].Remedy.WithObjects(f.Impact)
		p.Findings[i].Rejudge()
		JudgeFinal(cfg, &p.Findings[i])
	}
	return p.Findings
}
