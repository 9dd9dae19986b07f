package objects

import (
	"slices"
	"sort"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// Joining the effects of an object to the findings that cause them, and
// counting them per finding.

// attribute returns the findings an effect is joined to: from the
// effect's field up to the root, the first findings at one field whose
// check can cause the effect; failing that, the first findings at all;
// failing that, the findings about the whole CRD or version (a scope
// change, say).
func (r *ObjectReader) attribute(e objectEffect) []int {
	for _, prefer := range []bool{true, false} {
		for p := e.schemaPath; p != ""; p = p.Parent() {
			var hit []int
			for _, i := range r.byField[p] {
				if !prefer || causes(r.findings[i].Check, e) {
					hit = append(hit, i)
				}
			}
			if len(hit) > 0 {
				return hit
			}
		}
	}
	return r.crdLevel
}

// causes tells whether a finding of check can cause the effect e.
func causes(check string, e objectEffect) bool {
	switch e.effect {
	case finding.EffectPruned:
		switch check {
		case config.CheckExistingFieldRemoval, config.CheckPreserveUnknownFields, config.CheckAdditionalProperties,
			config.CheckNullable, config.CheckType, config.CheckIntOrString, config.CheckEmbeddedResource, config.CheckUnhandled:
			return true
		}
		return false
	case finding.EffectDefaulted:
		return check == config.CheckDefault
	case finding.EffectRejected, finding.EffectStatusRejected:
		if e.required {
			return check == config.CheckRequired
		}
		switch check {
		case config.CheckRequired, config.CheckDefault, config.CheckExistingFieldRemoval,
			config.CheckPreserveUnknownFields, config.CheckMapType:
			return false
		}
		return true
	}
	return false
}

// impactAcc accumulates the impact of one finding.
type impactAcc struct {
	lastObject int // the last object counted (objects are numbered from 1)
	affected   int
	ratcheted  int
	// updatesRefused: rejected objects that only an update refuses (a
	// CEL transition rule; a create passes).
	updatesRefused int
	rejected       bool // the last object counted was rejected
	// objRatchets, objRefused: the last object counted was counted in
	// ratcheted, in updatesRefused.
	objRatchets, objRefused bool
	// statusRatcheted, statusRejected: as ratcheted and rejected, for
	// EffectStatusRejected.
	statusRatcheted int
	statusRejected  bool
	effects         map[finding.Effect]*effectAcc
}

type effectAcc struct {
	lastObject int
	objects    int
	examples   []finding.ObjectEffect // the smallest names, sorted
}

func (a *impactAcc) add(objectNo int, name string, e objectEffect, ratchets bool) {
	if a.lastObject != objectNo {
		a.lastObject, a.rejected, a.statusRejected, a.objRatchets, a.objRefused = objectNo, false, false, false, false
		a.affected++
	}
	if e.effect == finding.EffectStatusRejected && !a.statusRejected {
		a.statusRejected = true
		if ratchets {
			a.statusRatcheted++
		}
	}
	if e.effect == finding.EffectRejected {
		// An object ratchets for the finding when each of its rejections
		// does; one that a transition rule refuses on every update does
		// not, whichever of its rejections comes first.
		switch {
		case !a.rejected:
			a.rejected, a.objRatchets = true, ratchets
			if ratchets {
				a.ratcheted++
			}
		case a.objRatchets && !ratchets:
			a.objRatchets = false
			a.ratcheted--
		}
		if e.noRatchet && !a.objRefused {
			a.objRefused = true
			a.updatesRefused++
		}
	}
	if a.effects == nil {
		a.effects = map[finding.Effect]*effectAcc{}
	}
	ea := a.effects[e.effect]
	if ea == nil {
		ea = &effectAcc{}
		a.effects[e.effect] = ea
	}
	if ea.lastObject == objectNo {
		return // one example per object
	}
	ea.lastObject = objectNo
	ea.objects++
	i := sort.Search(len(ea.examples), func(i int) bool { return ea.examples[i].Object >= name })
	if i >= finding.MaxExamples {
		return
	}
	ea.examples = slices.Insert(ea.examples, i, e.public(name))
	if len(ea.examples) > finding.MaxExamples {
		ea.examples = ea.examples[:finding.MaxExamples]
	}
}
