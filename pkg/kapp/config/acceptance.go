package config

import (
	"slices"
	"time"
)

// Acceptance is an accepted loss of stored data: the one act that lets a
// finding that loses stored data (Finding.DataLoss: a field stored
// objects hold removed, pruned or no longer kept, a stored version
// removed, a CRD deleted or replaced with its objects) pass. It is a
// different act from a Waiver, which waives a rule and never a loss: it is
// given only in the settings (the acceptDataLoss key of a kapp Config's
// preflightRules, the KAPP_CRD_UPGRADE_SAFETY_CONFIG file, the tools
// command's --config, the webhook's --config), never by an annotation of
// the CRD whose data is lost, and it names what is lost: the CRD, the
// check, the version, the field path, and at most how many objects.
//
// It covers a loss only where the loss is within it (Covers): the same
// CRD, check, version and path, exactly, and at most Objects objects
// counted. A larger loss is a new finding.
type Acceptance struct {
	// CRD is the CRD's metadata.name.
	CRD string
	// Check is the check ID of the loss (existingFieldRemoval,
	// crdDeletion, storedVersionRemoval, ...).
	Check string
	// Version is the version the loss is about (the version of the field,
	// or the version removed); "" for a loss of the whole CRD
	// (crdDeletion).
	Version string
	// Path is the schema path of the field lost (^.spec.color), exactly as
	// outputs print it; "" for a loss not at a field (a version removed, a
	// CRD deleted).
	Path string
	// Objects is the most objects the loss may affect, as counted by the
	// run (the stored objects of a cluster, or --objects samples).
	Objects int
	// Reason says why losing the data is acceptable; required.
	Reason string
	// Expires is the last day the acceptance applies (UTC); required.
	Expires time.Time
	// Owner is who answers for the loss; optional.
	Owner string
}

// LossSubject is what an acceptance is matched against: the facts of one
// finding that loses stored data.
type LossSubject struct {
	CRD, Check, Version, Path string
	// Objects is how many objects the loss affects, as counted; Counted
	// says whether the run counted them at all (false: no objects were
	// read, or the loss cannot be counted through the API).
	Objects int
	Counted bool
	// Live: the run can lose data (a deploy, a webhook review, a live
	// comparison): an uncounted loss is then never covered. Offline
	// (files only), an acceptance covers an uncounted loss it names: the
	// count is enforced where the objects are read.
	Live bool
}

// AcceptanceGap says why an acceptance that names a loss does not cover it.
type AcceptanceGap string

const (
	// GapExpired: the acceptance expired.
	GapExpired AcceptanceGap = "expired"
	// GapMoreObjects: the loss affects more objects than the acceptance
	// allows.
	GapMoreObjects AcceptanceGap = "moreObjects"
	// GapUncounted: a live run could not count the objects the loss
	// affects, so it cannot tell whether the acceptance covers it.
	GapUncounted AcceptanceGap = "uncounted"
)

// Names tells whether a names the loss s: the same CRD, check, version
// and path, whatever its count and expiry.
func (a *Acceptance) Names(s LossSubject) bool {
	return a.CRD == s.CRD && a.Check == s.Check && a.Version == s.Version && a.Path == s.Path
}

// ExpiredAt tells whether the acceptance no longer applies at now: from
// the end of its Expires day, UTC, on.
func (a *Acceptance) ExpiredAt(now time.Time) bool {
	return !now.Before(a.Expires.AddDate(0, 0, 1))
}

// ExpiresText is the expiry date as written ("2026-12-31").
func (a *Acceptance) ExpiresText() string {
	return a.Expires.Format(DateFormat)
}

// gap is why a, which names s, does not cover it at now; "" when it does.
func (a *Acceptance) gap(s LossSubject, now time.Time) AcceptanceGap {
	switch {
	case a.ExpiredAt(now):
		return GapExpired
	case !s.Counted && s.Live:
		return GapUncounted
	case s.Counted && s.Objects > a.Objects:
		return GapMoreObjects
	}
	return ""
}

// Accept returns the acceptance that covers the loss s, or, when none
// does, the first that names it with why it falls short (gap); nil and ""
// when none names it.
func (c *Settings) Accept(s LossSubject) (a *Acceptance, gap AcceptanceGap) {
	now := c.Clock()
	var first *Acceptance
	var firstGap AcceptanceGap
	for i := range c.AcceptDataLoss {
		a := &c.AcceptDataLoss[i]
		if !a.Names(s) {
			continue
		}
		g := a.gap(s, now)
		if g == "" {
			return a, ""
		}
		if first == nil {
			first, firstGap = a, g
		}
	}
	return first, firstGap
}

// AnnotationWaivers is the annotationWaivers key: which checks the waiver
// annotations of a CRD may waive in this run. A nil *AnnotationWaivers is
// the run's default: every waivable check in the preflight and the tools
// command (where the annotation is reviewed in the change that carries
// it), none in the admission webhook (where the annotation is written by
// the very writer the webhook guards; webhook.WebhookSettings).
type AnnotationWaivers struct {
	// Checks are the check IDs annotations may waive; empty: none.
	Checks []string
}

// AnnotationWaiverAllowed tells whether a waiver annotation may waive a
// finding of check.
func (c *Settings) AnnotationWaiverAllowed(check string) bool {
	return c.AnnotationWaivers == nil || slices.Contains(c.AnnotationWaivers.Checks, check)
}

// WaiverRefusal says why a waiver that matches a finding does not waive it.
type WaiverRefusal string

const (
	// RefusedDataLoss: the finding loses stored data; no waiver waives a
	// loss (from the settings or an annotation): only acceptDataLoss
	// accepts one.
	RefusedDataLoss WaiverRefusal = "dataLoss"
	// RefusedCarriedOver: a waiver annotation the old CRD already had, as
	// it was: it was reviewed with an earlier change, not with this one.
	RefusedCarriedOver WaiverRefusal = "carriedOver"
	// RefusedAnnotationsNotAllowed: the settings' annotationWaivers do not
	// let annotations waive this check (the webhook's default: none).
	RefusedAnnotationsNotAllowed WaiverRefusal = "annotationNotAllowed"
)

// WaiverVerdict is what the waivers of the settings do to one finding.
type WaiverVerdict struct {
	// Waiver waives the finding; nil when none does.
	Waiver *Waiver
	// Expired: a waiver that matches but expired (when none waives).
	Expired *Waiver
	// Refused: a waiver that matches but may not waive the finding, and
	// Refusal why (when none waives).
	Refused *Waiver
	Refusal WaiverRefusal
}

// JudgeWaivers returns what the waivers do to the finding s, which loses
// stored data when dataLoss: the first matching waiver that may waive it
// and has not expired waives it. Otherwise the first refused one is
// named (a refusal says more than an expiry), else the first expired one.
func (c *Settings) JudgeWaivers(s WaiverSubject, dataLoss bool) WaiverVerdict {
	now := c.Clock()
	var v WaiverVerdict
	for i := range c.Waivers {
		w := &c.Waivers[i]
		if !w.Matches(s) {
			continue
		}
		var refusal WaiverRefusal
		switch {
		case dataLoss:
			refusal = RefusedDataLoss
		case w.Source == SourceAnnotation && w.CarriedOver:
			refusal = RefusedCarriedOver
		case w.Source == SourceAnnotation && !c.AnnotationWaiverAllowed(s.Check):
			refusal = RefusedAnnotationsNotAllowed
		}
		switch {
		case refusal != "":
			if v.Refused == nil {
				v.Refused, v.Refusal = w, refusal
			}
		case w.ExpiredAt(now):
			if v.Expired == nil {
				v.Expired = w
			}
		default:
			return WaiverVerdict{Waiver: w}
		}
	}
	if v.Refused != nil {
		v.Expired = nil
	}
	return v
}
