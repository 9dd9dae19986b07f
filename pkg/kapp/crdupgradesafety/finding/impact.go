package finding

import (
	"slices"

	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
)

// Effect is what the new CRD does to a stored object at one field.
type Effect string

const (
	// EffectRejected: the object, read under the new CRD, fails its
	// validation; writes to it are refused (but see Impact.Ratcheted).
	EffectRejected Effect = "rejected"
	// EffectPruned: data the object holds is no longer kept: a field no
	// longer declared, unknown fields no longer preserved, a null no
	// longer allowed. It is gone from reads and lost on the next write.
	EffectPruned Effect = "data pruned"
	// EffectDefaulted: a field reads differently, because a default is
	// applied where none was or a different default applies.
	EffectDefaulted Effect = "value defaulted differently"
	// EffectStatusRejected: the object's status, read under the new CRD,
	// fails its validation where the version has the status subresource:
	// a create drops status and an update of the object keeps the stored
	// one, so only writes of the status (its controller's) are refused
	// (but see Impact.StatusRatcheted).
	EffectStatusRejected Effect = "status writes refused"
	// EffectDeleted: the object is deleted with its CRD.
	EffectDeleted Effect = "deleted"
)

// effectOrder is the order of the effects of a read in an Impact.
var EffectOrder = []Effect{EffectPruned, EffectDefaulted, EffectRejected, EffectStatusRejected}

// rejects tells whether the effect is a refusal of writes by validation.
func (e Effect) Rejects() bool { return e == EffectRejected || e == EffectStatusRejected }

// Impact is what one finding does to the stored custom resources of its
// version (or, for crdDeletion, of its CRD): how many were read, how many
// the finding affects and how, with the first few by name.
type Impact struct {
	// Source says where the objects came from: "cluster" (the stored
	// objects, read live) or "samples" (--objects).
	Source string `json:"source"`
	// Kind is the kind of the objects, "Widget".
	Kind string `json:"kind"`
	// Objects is how many objects of the finding's version were read.
	Objects int `json:"objects"`
	// Affected is how many of them the finding affects (0: none, proven
	// by the read).
	Affected int `json:"affected"`
	// Effects says how, one entry per effect, in the order of Effect*.
	Effects []EffectCount `json:"effects,omitempty"`
	// Ratcheted is how many of the rejected objects can still be updated
	// while their invalid fields are left alone (CRD validation
	// ratcheting); they are refused on create and on any change of those
	// fields.
	Ratcheted int `json:"ratcheted,omitempty"`
	// StatusRatcheted is how many of the objects with
	// EffectStatusRejected can still have their status written while its
	// invalid fields are left alone (validation ratcheting).
	StatusRatcheted int `json:"statusRatcheted,omitempty"`
	// UpdatesRefused is how many of the rejected objects a CEL transition
	// rule (one that uses oldSelf) refuses on every update, which
	// validation ratcheting does not cover; a create of them passes.
	UpdatesRefused int `json:"updatesRefused,omitempty"`
	// VersionAffected is how many objects of the version any finding
	// affects: what the summary line counts.
	VersionAffected int `json:"versionAffected"`
}

// EffectCount is one effect of a finding on the objects.
type EffectCount struct {
	Effect Effect `json:"effect"`
	// Objects is how many objects have this effect.
	Objects int `json:"objects"`
	// Examples are the first few of them (by name) with what happens.
	Examples []ObjectEffect `json:"examples"`
}

// ObjectEffect is the effect on one object at one field, as facts: where
// (Object, Field), the rule (for a rejection, the apiserver's error Type
// and Detail) and the stored data (Value), which an output decides
// whether to print (WithoutStoredValues).
type ObjectEffect struct {
	Object string `json:"object"` // namespace/name, or name
	Field  string `json:"field"`  // spec.color, spec.items[2].name
	// Type is, for a rejection, the apiserver's error type ("Invalid
	// value", "Unsupported value", "Required value"); "" otherwise.
	Type string `json:"type,omitempty"`
	// Detail is, for a rejection, the apiserver's detail of the error
	// ("spec.token in body should match '^[0-9]+$'", a CEL rule's message).
	// It may quote stored data (a format's error quotes the value, a CEL
	// messageExpression may print any field): WithoutStoredValues drops it
	// with Value.
	Detail string `json:"detail,omitempty"`
	// Value is the stored data: what the object holds there ("red"), for a
	// default the change ("absent -> \"large\""), for a rejection the value
	// refused as the apiserver prints it ("\"abc\""; "" where it prints
	// none), for the live checks of other objects what names the version
	// (managers, an owner's apiVersion).
	Value string `json:"value"`
	// SchemaPath is the schema path of Field (^.spec.items[*].name):
	// outputs name Field only where it is below the finding's own.
	SchemaPath schemapath.Path `json:"-"`
}

// maxExamples is how many objects an effect names.
const MaxExamples = 3

// sourceNoun is how an impact message names objects of a source.
func SourceNoun(source string) string {
	if source == SourceSamples {
		return "sample"
	}
	return "stored"
}

// Impact sources.
const (
	SourceCluster = "cluster"
	SourceSamples = "samples"
)

// unaffectedApplies tells whether unaffectedEnforcement may turn a finding
// into a warning once the stored objects show it affects none of them: a
// finding about a field of a check whose descriptor says so
// (Descriptor.Unaffected).
func unaffectedApplies(f Finding) bool {
	if f.Field == "" {
		return false
	}
	d := DescriptorOf(f.Check)
	return d != nil && d.unaffectedWarns(&f)
}

// WithoutStoredValues returns findings as an output whose reader may not
// read the stored objects shows them (the admission webhook's answers,
// unless its settings reveal values): every object effect keeps the
// object, the field and the rule (for a rejection the apiserver's error
// type; the constraint is the finding's own change, from the schema), and
// loses the stored data (Value) and the apiserver's detail (Detail, which
// may quote it); a failed read of the objects loses the error's words
// (ReadError: a conversion webhook's message may quote them). findings are left as they are (they may be shared by a
// cache): the findings with object effects are copies.
func WithoutStoredValues(findings []Finding) []Finding {
	out := slices.Clone(findings)
	for i := range out {
		out[i] = out[i].withoutStoredValues()
	}
	return out
}

func (f Finding) withoutStoredValues() Finding {
	f.ReadError = ""
	if f.Impact != nil && len(f.Impact.Effects) > 0 {
		imp := *f.Impact
		imp.Effects = slices.Clone(imp.Effects)
		for i := range imp.Effects {
			imp.Effects[i].Examples = withoutValues(imp.Effects[i].Examples)
		}
		f.Impact = &imp
	}
	if f.Object != nil && len(f.Object.Fields) > 0 {
		o := *f.Object
		o.Fields = withoutValues(o.Fields)
		f.Object = &o
	}
	return f
}

func withoutValues(list []ObjectEffect) []ObjectEffect {
	if list == nil {
		return nil
	}
	out := make([]ObjectEffect, len(list))
	for i, e := range list {
		e.Value, e.Detail = "", ""
		out[i] = e
	}
	return out
}

// EffectGCStopped: the object names the removed version in an
// ownerReference; the garbage collector can no longer resolve its owner, so
// it is no longer deleted with it (kubernetes/kubernetes#102641).
const EffectGCStopped Effect = "garbage collection stopped"

// EffectSSARefused: every server-side apply of the object is refused: a
// managedFields entry names a version the CRD no longer has, which the
// apiserver cannot convert the object to ("request to convert CR to an
// invalid group/version").
const EffectSSARefused Effect = "server-side apply refused"

// EffectManagedFieldsDropped: the object's managedFields entries name two or
// more versions, and a write of it while the conversion webhook is down
// drops them all (up to Kubernetes 1.36, kubernetes#136919).
const EffectManagedFieldsDropped Effect = "managedFields dropped while the conversion webhook is down"

// The effects of the conversion probe on a stored object (check
// conversionWebhook).
const (
	// EffectConversionRefused: the new conversion webhook refuses the
	// object, or answers so that the apiserver refuses the answer: every
	// read of it at the target version fails, and every LIST holding it.
	EffectConversionRefused Effect = "conversion refused"
	// EffectConversionLost: a round trip through the new conversion loses
	// or changes the field.
	EffectConversionLost Effect = "lost in conversion"
	// EffectAnnotationsNearLimit: the object's annotations, stored or
	// converted, are near the apiserver's 256 KiB limit.
	EffectAnnotationsNearLimit Effect = "annotations near the limit"
)
