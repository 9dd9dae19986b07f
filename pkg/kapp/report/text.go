package report

import (
	"fmt"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
)

// This file composes the English of a finding from its facts: the one place
// that words data loss, impact, exemptions and remedies. Each output
// (table.go, admission.go, markdown.go, github.go, sarif.go, json.go)
// arranges these parts its own way.

// Message is a finding's message as the outputs print it: "data loss: "
// when it loses stored data, what changed (where the verdict depends on
// the Kubernetes version: from which version on, and the version judged
// for), what it does to the stored objects read, what made an error a
// warning (unaffectedEnforcement, alphaVersionEnforcement) and the
// exemption that waived it, e.g.
//
//	data loss: existing field removed (was string): 2 of 2 stored Widgets hold data here, lost on their next write: default/a ("red"), default/b ("blue")
func Message(f finding.Finding) string {
	var b strings.Builder
	if f.DataLoss {
		b.WriteString("data loss: ")
	}
	switch {
	case f.Object != nil:
		b.WriteString(objectText(f.Object))
	case f.StaleWaiver != nil:
		b.WriteString(staleText(f.StaleWaiver))
	default:
		b.WriteString(f.ChangeText)
		if len(f.Denied) > 0 {
			b.WriteString(": ")
			b.WriteString(deniedText(f.CRD, f.Denied))
		}
		if f.ReadError != "" {
			b.WriteString(": ")
			b.WriteString(f.ReadError)
		}
	}
	if f.KubeVersionSince != "" {
		fmt.Fprintf(&b, " (Kubernetes %s and later; judged for %s)", f.KubeVersionSince, f.KubeVersion)
	}
	if text := ImpactText(f); text != "" {
		b.WriteString(": ")
		b.WriteString(text)
	}
	if f.Unaffected {
		b.WriteString("; a warning under unaffectedEnforcement Warn: writers that send values the old schema accepted may still be refused")
	}
	if f.AlphaLenient {
		b.WriteString(" (alpha version: a warning under alphaVersionEnforcement Warn)")
	}
	if w := f.Waiver; w != nil {
		if text := waiverText(w, true); text != "" {
			fmt.Fprintf(&b, " (exempted: %s)", text)
		} else {
			b.WriteString(" (exempted)")
		}
	}
	if w := f.RefusedWaiver; w != nil {
		fmt.Fprintf(&b, " (not exempted: %s", refusalText(f.WaiverRefusal, w))
		if text := waiverText(w, true); text != "" {
			b.WriteString("; it read: ")
			b.WriteString(text)
		}
		b.WriteString(")")
	}
	if a := f.Acceptance; a != nil {
		fmt.Fprintf(&b, " (data loss accepted: %s)", acceptanceText(a, f))
	}
	if a := f.ShortAcceptance; a != nil {
		fmt.Fprintf(&b, " (not accepted: %s; the acceptance read: %s)", gapText(f.AcceptanceGap, a, f), acceptanceText(a, f))
	}
	if w := f.ExpiredWaiver; w != nil {
		fmt.Fprintf(&b, " (not exempted: the waiver expired at the end of %s UTC", w.ExpiresText())
		if text := waiverText(w, false); text != "" {
			b.WriteString("; it read: ")
			b.WriteString(text)
		}
		b.WriteString(")")
	}
	return b.String()
}

// refusalText says why a waiver that matches a finding does not waive it.
func refusalText(r config.WaiverRefusal, w *config.Waiver) string {
	source := "a waiver"
	if w.Source == config.SourceAnnotation {
		source = "a waiver annotation"
	}
	switch r {
	case config.RefusedDataLoss:
		return source + " cannot waive a loss of stored data; only an acceptDataLoss entry of the settings that names the loss accepts it"
	case config.RefusedCarriedOver:
		return "the waiver annotation is carried over unchanged from the stored CRD: it was reviewed with an earlier change, not this one (add or change it with the change it waives)"
	case config.RefusedAnnotationsNotAllowed:
		return "the settings' annotationWaivers do not let a waiver annotation waive this check (in the admission webhook, by default, none)"
	}
	return string(r)
}

// acceptanceText words an acceptDataLoss entry: its reason, the most
// objects it accepts, its owner and expiry.
func acceptanceText(a *config.Acceptance, f finding.Finding) string {
	parts := []string{a.Reason, fmt.Sprintf("at most %d %s", a.Objects, plural.Of(a.Objects, "object", "objects"))}
	if f.Acceptance == a && f.Impact == nil && f.Object == nil {
		parts[1] += ", not counted in this run (no objects read): the count is enforced where the objects are read"
	}
	if a.Owner != "" {
		parts = append(parts, "owner "+a.Owner)
	}
	parts = append(parts, "until "+a.ExpiresText())
	return strings.Join(parts, "; ")
}

// gapText says why an acceptDataLoss entry that names a loss does not
// cover it.
func gapText(g config.AcceptanceGap, a *config.Acceptance, f finding.Finding) string {
	switch g {
	case config.GapExpired:
		return "the acceptance expired at the end of " + a.ExpiresText() + " UTC"
	case config.GapMoreObjects:
		n := finding.LossSubject(&f, true).Objects
		return fmt.Sprintf("the loss affects %d %s, more than the %d accepted", n, plural.Of(n, "object", "objects"), a.Objects)
	case config.GapUncounted:
		return "this run reads the cluster but could not count the objects the loss affects, so it cannot tell that the acceptance covers it"
	}
	return string(g)
}

// MaxDeniedNamed bounds the findings of a denial by our own admission
// webhook that an apiserverRejects finding names (deniedText); it counts
// the others.
const MaxDeniedNamed = 50

// deniedText names the findings of a denial by the CRDUpgradeSafety
// admission webhook that this run does not report as errors: each by its
// line when the denial lists it, else by its facts (CRD, version, field,
// check), then the webhook's fingerprint of it, labelled, and why it is
// listed: an error under the webhook's settings, and under this check's a
// warning (with what made it one) or nothing, e.g.
//
//	crd widgets.example.com version v1 field ^.spec.color: [enum] enum values removed: ["blue"] (webhook finding ed63ac23ebcd: an error under the webhook's settings; under this check's a warning, exempted: PR 7)
func deniedText(crd string, denied []finding.DeniedFinding) string {
	items := make([]string, 0, min(len(denied), MaxDeniedNamed+1))
	for i, d := range denied {
		if i == MaxDeniedNamed {
			n := len(denied) - i
			items = append(items, fmt.Sprintf("and %d more %s of the webhook", n, plural.Of(n, "finding", "findings")))
			break
		}
		name := d.Line
		if name == "" {
			version := d.Version
			if d.PairVersion != "" {
				version += " -> " + d.PairVersion
			}
			name = FindingSubject(crd, version, d.Field)
			if d.Check != "" {
				name += ": [" + d.Check + "]"
			}
		}
		why := "not found under this check's"
		if h := d.Here; h != nil {
			why = "under this check's a " + string(h.Severity)
			if r := warningReasons(*h); len(r) > 0 {
				why += ", " + strings.Join(r, ", ")
			}
		}
		items = append(items, fmt.Sprintf("%s (webhook finding %s: an error under the webhook's settings; %s)", name, d.Fingerprint, why))
	}
	return strings.Join(items, "; ")
}

// warningReasons says what made a finding that is an error by its check a
// warning, as the notes of its Message do: a waiver, an acceptance of its
// data loss, unaffectedEnforcement or alphaVersionEnforcement Warn (none
// for the mode or the check's enforcement).
func warningReasons(f finding.Finding) []string {
	var rs []string
	if w := f.Waiver; w != nil {
		if text := waiverText(w, true); text != "" {
			rs = append(rs, "exempted: "+text)
		} else {
			rs = append(rs, "exempted")
		}
	}
	if a := f.Acceptance; a != nil {
		rs = append(rs, "data loss accepted: "+acceptanceText(a, f))
	}
	if f.Unaffected {
		rs = append(rs, "unaffectedEnforcement Warn (no stored object affected)")
	}
	if f.AlphaLenient {
		rs = append(rs, "alphaVersionEnforcement Warn (alpha version)")
	}
	return rs
}

// FingerprintSuffix is how a line of text ends with the finding's
// fingerprint (" [fp:1a2b3c4d5e6f]"): "" for a finding without one.
func FingerprintSuffix(fingerprint string) string {
	if fingerprint == "" {
		return ""
	}
	return " [fp:" + fingerprint + "]"
}

// waiverText words a waiver's reason, owner and (with expiry) its expiry:
// "waive annotation: values renamed, PR 123; owner team-a; until 2026-12-31".
func waiverText(w *config.Waiver, expiry bool) string {
	var parts []string
	if w.Reason != "" {
		reason := w.Reason
		if w.Source == config.SourceAnnotation {
			reason = "waive annotation: " + reason
		}
		parts = append(parts, reason)
	}
	if w.Owner != "" {
		parts = append(parts, "owner "+w.Owner)
	}
	if expiry && !w.Expires.IsZero() {
		parts = append(parts, "until "+w.ExpiresText())
	}
	return strings.Join(parts, "; ")
}

// staleText says what a stale waiver names: it waives nothing.
func staleText(w *config.Waiver) string {
	var what []string
	if w.Fingerprint != "" {
		what = append(what, "fingerprint "+w.Fingerprint)
	}
	if len(w.Checks) > 0 {
		what = append(what, "checks "+strings.Join(w.Checks, ", "))
	}
	if w.Path != "" {
		what = append(what, "path "+w.Path)
	}
	if len(what) == 0 {
		what = append(what, "every check")
	}
	source := "waiver"
	if w.Source == config.SourceAnnotation {
		source = "waiver annotation"
	}
	text := fmt.Sprintf("stale %s: it matches no finding of this CRD (%s)", source, strings.Join(what, "; "))
	if wt := waiverText(w, true); wt != "" {
		text += ", " + wt
	}
	return text
}

// VersionText is the version a finding is about as outputs print it:
// "v1", "v1beta1 -> v1" for a servedVersion pair, "" for none.
func VersionText(f finding.Finding) string {
	if f.PairVersion != "" {
		return f.Version + " -> " + f.PairVersion
	}
	return f.Version
}

// FieldText is the field a finding is about as outputs print it: its
// schema path, or the field of the CRD object the apiserver names.
func FieldText(f finding.Finding) string {
	if f.Field != "" {
		return f.Field.String()
	}
	return f.CRDField
}

// ImpactText says what a finding does to the stored objects read ("" when
// none were read, and for a CRD deletion, whose message counts them).
func ImpactText(f finding.Finding) string {
	imp := f.Impact
	if imp == nil || f.Object != nil || f.Check == config.CheckCRDDeletion {
		return ""
	}
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
		field := f.Field
		if f.Cause != nil {
			field = f.Cause.Field
		}
		examples := exampleList(e, field)
		switch e.Effect {
		case finding.EffectPruned:
			if imp.Source == finding.SourceSamples {
				parts = append(parts, fmt.Sprintf("%s %s data here, pruned when applied: %s", of, plural.Of(e.Objects, "holds", "hold"), examples))
			} else {
				parts = append(parts, fmt.Sprintf("%s %s data here, lost on their next write: %s", of, plural.Of(e.Objects, "holds", "hold"), examples))
			}
		case finding.EffectDefaulted:
			parts = append(parts, fmt.Sprintf("%s %s differently: %s", of, plural.Of(e.Objects, "reads", "read"), examples))
		case finding.EffectGCStopped:
			// Objects of every kind were read, not the CRD's stored objects.
			parts = append(parts, fmt.Sprintf("%d of %d objects read %s ownerReferences to it: %s",
				e.Objects, imp.Objects, plural.Of(e.Objects, "has", "have"), examples))
		case finding.EffectConversionRefused:
			parts = append(parts, fmt.Sprintf("%s refused: %s", of, examples))
		case finding.EffectConversionLost:
			parts = append(parts, fmt.Sprintf("%s %s it: %s", of, plural.Of(e.Objects, "loses", "lose"), examples))
		case finding.EffectAnnotationsNearLimit:
			parts = append(parts, fmt.Sprintf("%s near the limit: %s", of, examples))
		case finding.EffectSSARefused:
			parts = append(parts, fmt.Sprintf("%s %s managedFields entries at it: %s", of, plural.Of(e.Objects, "has", "have"), examples))
		case finding.EffectManagedFieldsDropped:
			parts = append(parts, fmt.Sprintf("%s %s managedFields entries at several versions: %s", of, plural.Of(e.Objects, "has", "have"), examples))
		case finding.EffectRejected:
			note := ratchetNote(imp.Source, imp.Ratcheted > 0, imp.Ratcheted, e.Objects)
			if imp.UpdatesRefused == e.Objects && imp.Source == finding.SourceCluster {
				note = "; every update is refused by a transition rule (oldSelf), which validation ratcheting does not cover; a create passes"
			}
			parts = append(parts, fmt.Sprintf("%s rejected: %s%s", of, examples, note))
		case finding.EffectStatusRejected:
			parts = append(parts, fmt.Sprintf("%s: status writes refused: %s%s", of, examples,
				statusNote(imp.Source, imp.StatusRatcheted, e.Objects)))
		}
	}
	return strings.Join(parts, "; ")
}

// objectText says what happens to one stored object that no finding about
// the schema explains.
func objectText(o *finding.ObjectFinding) string {
	noun := "existing"
	if o.Source == finding.SourceSamples {
		noun = "sample"
	}
	items := make([]string, 0, len(o.Fields)+1)
	for _, ef := range o.Fields {
		if text := effectText(ef); text != "" {
			items = append(items, ef.Field+": "+text)
		} else {
			items = append(items, ef.Field)
		}
	}
	if o.MoreFields > 0 {
		items = append(items, fmt.Sprintf("and %d more", o.MoreFields))
	}
	subject := fmt.Sprintf("%s %s %s", noun, o.Kind, o.Name)
	detail := strings.Join(items, "; ")
	if o.AlreadyInvalid {
		return fmt.Sprintf("%s is already invalid under the old CRD and still is, which the update does not change: %s", subject, detail)
	}
	switch o.Effect {
	case finding.EffectPruned:
		return fmt.Sprintf("%s would lose data, pruned under the new schema: %s", subject, detail)
	case finding.EffectDefaulted:
		return fmt.Sprintf("%s would read differently under the new schema: %s", subject, detail)
	case finding.EffectStatusRejected:
		ratcheted := 0
		if o.Ratchets {
			ratcheted = 1
		}
		return fmt.Sprintf("%s would have its status writes refused: %s%s", subject, detail, statusNote(o.Source, ratcheted, 1))
	}
	return fmt.Sprintf("%s would be invalid: %s%s", subject, detail, ratchetNote(o.Source, o.Ratchets, 1, 1))
}

// sourceNoun is how an impact message names objects of a source.
func sourceNoun(source string) string {
	if source == finding.SourceSamples {
		return "sample"
	}
	return "stored"
}

// exampleList names the example objects of an effect with their values;
// the field is named where it is below the finding's.
func exampleList(e finding.EffectCount, field schemapath.Path) string {
	items := make([]string, 0, len(e.Examples)+1)
	for _, ex := range e.Examples {
		text := effectText(ex)
		switch {
		case ex.SchemaPath != field && ex.Field != "" && text != "":
			items = append(items, fmt.Sprintf("%s (%s: %s)", ex.Object, ex.Field, text))
		case ex.SchemaPath != field && ex.Field != "":
			items = append(items, fmt.Sprintf("%s (%s)", ex.Object, ex.Field))
		case text != "":
			items = append(items, fmt.Sprintf("%s (%s)", ex.Object, text))
		default:
			items = append(items, ex.Object)
		}
	}
	if more := e.Objects - len(e.Examples); more > 0 {
		items = append(items, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(items, ", ")
}

// effectText is what happens at one field of an object: for a rejection
// the apiserver's error as it prints it (its type, the value refused, its
// detail: field.Error.ErrorBody), else the value; the parts an output left
// out (finding.Finding.WithoutStoredValues) are left out here.
func effectText(ex finding.ObjectEffect) string {
	if ex.Type == "" {
		return ex.Value
	}
	text := ex.Type
	if ex.Value != "" {
		text += ": " + ex.Value
	}
	if ex.Detail != "" {
		text += ": " + ex.Detail
	}
	return text
}

// statusNote says which writes a status the new schema rejects refuses,
// where the version has the status subresource: ratcheted of rejected
// objects can still have their status written while its invalid fields
// are left alone.
func statusNote(source string, ratcheted, rejected int) string {
	note := "; only writes of the status (its controller's) are refused: a create drops status and an update of the object keeps the stored one"
	if source == finding.SourceSamples {
		return note + " (applied, the sample's status is dropped)"
	}
	switch {
	case ratcheted == 0:
		return note + "; every status write is refused"
	case ratcheted == rejected:
		return note + "; status writes that leave these fields alone still pass (validation ratcheting)"
	}
	return note + fmt.Sprintf("; for %d of them, status writes that leave these fields alone still pass (validation ratcheting)", ratcheted)
}

// ratchetNote says what validation ratcheting (GA since Kubernetes 1.33)
// does for rejected objects: ratcheted of rejected can still be updated
// while their invalid fields are left alone.
func ratchetNote(source string, ratchets bool, ratcheted, rejected int) string {
	if source == finding.SourceSamples {
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
