package crdupgradesafety

import (
	"fmt"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// VersionImpact is what an ObjectReader learnt of the objects of one
// version: ApplyImpacts joins it to the findings.
type VersionImpact struct {
	Version  string
	source   string
	kind     string
	objects  int
	affected int
	impacts  map[string]*Impact // by findingKey
	residual []Finding
}

// Objects is how many objects were read.
func (v VersionImpact) Objects() int { return v.objects }

// Result is the impact of the objects read so far.
func (r *ObjectReader) Result() VersionImpact {
	v := VersionImpact{Version: r.version, source: r.source, kind: r.kind, objects: r.objects,
		affected: r.affected, impacts: map[string]*Impact{}, residual: r.residual.findings}
	for i, acc := range r.acc {
		imp := &Impact{Source: r.source, Kind: r.kind, Objects: r.objects, Affected: acc.affected,
			Ratcheted: acc.ratcheted}
		for _, effect := range []Effect{EffectPruned, EffectDefaulted, EffectRejected} {
			if ea := acc.effects[effect]; ea != nil {
				imp.Effects = append(imp.Effects, EffectCount{Effect: effect, Objects: ea.objects, Examples: ea.examples})
			}
		}
		v.impacts[findingKey(r.findings[i])] = imp
	}
	return v
}

func findingKey(f Finding) string {
	return f.Version + "\x00" + f.Field + "\x00" + f.Check + "\x00" + f.Message
}

// ApplyImpacts joins what the objects' reads found (impacts, one per
// version read) to the findings of one CRD, and returns them sorted:
//
//   - every finding at a field of a version read gets its Impact, said at
//     the end of its message ("2 of 2 stored Widgets hold data here, lost
//     on their next write: default/big (\"red\"), ...", "none of 3 stored
//     Widgets affected");
//   - under unaffectedEnforcement Warn, a finding proven to affect no
//     object becomes a warning where the read sees the whole risk
//     (unaffectedApplies);
//   - effects no finding explains are existingResources findings;
//   - findings that lose stored data are marked DataLoss, say "data loss"
//     and sort first (SortFindings).
//
// With no impacts (offline, without samples) it only marks data loss.
func ApplyImpacts(findings []Finding, impacts []VersionImpact, cfg *config.Settings) []Finding {
	cfg = newPolicy(cfg, "").cfg
	byVersion := map[string]*VersionImpact{}
	for i := range impacts {
		byVersion[impacts[i].Version] = &impacts[i]
	}
	out := make([]Finding, 0, len(findings))
	for _, f := range findings {
		if vi := byVersion[f.Version]; vi != nil && f.Field != "" {
			imp := vi.impacts[findingKey(f)]
			if imp == nil {
				imp = &Impact{Source: vi.source, Kind: vi.kind, Objects: vi.objects}
			}
			imp.VersionAffected = vi.affected
			f.Impact = imp
			text := impactText(imp, f.Field)
			if imp.Affected == 0 && f.Severity == SeverityError && cfg.UnaffectedEnforcement == config.EnforcementWarn && unaffectedApplies(f) {
				f.Severity = SeverityWarning
				text += "; a warning under unaffectedEnforcement Warn: writers that send values the old schema accepted may still be refused"
			}
			f.Message = boundText(withImpact(f.Message, text), maxMessageBytes)
			out = append(out, exemptedButAffecting(f, text, cfg)...)
		}
		out = append(out, markDataLoss(f))
	}
	for _, vi := range impacts {
		out = append(out, vi.residual...)
	}
	SortFindings(out)
	return out
}

// exemptedButAffecting: an exemption (or a waiver annotation) reviewed the
// change, not the stored objects it turns out to affect. Those stay an
// existingResources finding, as they were before the objects were joined
// to the findings: waived only where existingResources is exempted too.
func exemptedButAffecting(f Finding, text string, cfg *config.Settings) []Finding {
	if f.Impact.Affected == 0 {
		return nil
	}
	if exempt, _ := cfg.Exempt(f.CRD, f.Check); !exempt {
		return nil
	}
	p := newPolicy(cfg, f.CRD)
	p.crdLevel(config.EnforcementStrict, f.Version, config.CheckExistingResources,
		"the exempted %s change at %s affects %s objects: %s", f.Check, f.Field, sourceNoun(f.Impact.Source), text)
	for i := range p.findings {
		p.findings[i].Impact = f.Impact
	}
	return p.findings
}

// withImpact inserts the impact text after a finding's message, before
// the exemption note the policy may have added.
func withImpact(msg, text string) string {
	if i := strings.LastIndex(msg, " (exempted"); i >= 0 && strings.HasSuffix(msg, ")") {
		return msg[:i] + ": " + text + msg[i:]
	}
	return msg + ": " + text
}

// markDataLoss marks a finding that loses stored data: one whose read
// found data pruned, a CRD deleted with its objects (crdDeletion), a
// stored version removed; and, when no object was read, a change that
// prunes whatever is stored (a removed field, unknown fields or map entries
// no longer kept).
func markDataLoss(f Finding) Finding {
	loses := false
	switch {
	case f.Check == config.CheckCRDDeletion || f.Check == config.CheckStoredVersionRemoval:
		loses = true
	case f.Impact != nil:
		for _, e := range f.Impact.Effects {
			loses = loses || e.Effect == EffectPruned
		}
	default:
		loses = prunesStoredData(f)
	}
	if loses && !f.DataLoss {
		f.DataLoss = true
		f.Message = "data loss: " + f.Message
	}
	return f
}

// prunesStoredData tells whether a finding's change prunes stored data
// wherever there is some.
func prunesStoredData(f Finding) bool {
	switch f.Check {
	case config.CheckExistingFieldRemoval, config.CheckPreserveUnknownFields:
		return true
	case config.CheckAdditionalProperties:
		return strings.Contains(f.Message, "pruned")
	}
	return false
}

// impactText says what a finding at field does to the objects read.
func impactText(imp *Impact, field string) string {
	noun := sourceNoun(imp.Source)
	kinds := plural.Noun(imp.Kind)
	if imp.Objects == 0 {
		return fmt.Sprintf("no %s %s to affect", noun, kinds)
	}
	if imp.Affected == 0 {
		return fmt.Sprintf("none of %d %s %s affected", imp.Objects, noun, plural.Of(imp.Objects, imp.Kind, kinds))
	}
	parts := make([]string, 0, len(imp.Effects))
	for _, e := range imp.Effects {
		of := fmt.Sprintf("%d of %d %s %s", e.Objects, imp.Objects, noun, plural.Of(imp.Objects, imp.Kind, kinds))
		examples := exampleList(e, field)
		switch e.Effect {
		case EffectPruned:
			if imp.Source == SourceSamples {
				parts = append(parts, fmt.Sprintf("%s %s data here, pruned when applied: %s", of, plural.Of(e.Objects, "holds", "hold"), examples))
			} else {
				parts = append(parts, fmt.Sprintf("%s %s data here, lost on their next write: %s", of, plural.Of(e.Objects, "holds", "hold"), examples))
			}
		case EffectDefaulted:
			parts = append(parts, fmt.Sprintf("%s %s differently: %s", of, plural.Of(e.Objects, "reads", "read"), examples))
		case EffectRejected:
			parts = append(parts, fmt.Sprintf("%s rejected: %s%s", of, examples, ratchetNote(imp.Source, imp.Ratcheted > 0, imp.Ratcheted, e.Objects)))
		}
	}
	return strings.Join(parts, "; ")
}

// exampleList names the example objects of an effect with their values;
// the field is named where it is below the finding's.
func exampleList(e EffectCount, field string) string {
	items := make([]string, 0, len(e.Examples)+1)
	for _, ex := range e.Examples {
		if ex.schemaPath == field || ex.Field == "" {
			items = append(items, fmt.Sprintf("%s (%s)", ex.Object, ex.Value))
		} else {
			items = append(items, fmt.Sprintf("%s (%s: %s)", ex.Object, ex.Field, ex.Value))
		}
	}
	if more := e.Objects - len(e.Examples); more > 0 {
		items = append(items, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(items, ", ")
}

// ratchetNote says what validation ratcheting (GA since Kubernetes 1.33)
// does for rejected objects: ratcheted of rejected can still be updated
// while their invalid fields are left alone.
func ratchetNote(source string, ratchets bool, ratcheted, rejected int) string {
	if source == SourceSamples {
		return " (refused when applied)"
	}
	them, these := "them", "these fields"
	if rejected == 1 {
		them = "it"
	}
	switch {
	case !ratchets || ratcheted == 0:
		return fmt.Sprintf("; every write to %s is refused, updates included", them)
	case ratcheted == rejected:
		return "; updates that leave " + these + " alone still pass (validation ratcheting); a create (a restore, " +
			"a re-apply elsewhere, a GitOps recreate) or a change of them is refused"
	}
	return fmt.Sprintf("; %d of them can still be updated while %s are left alone (validation ratcheting); "+
		"a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused; "+
		"every write to the others is refused", ratcheted, these)
}
