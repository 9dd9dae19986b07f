package config

// FailSituation names one situation where the check cannot tell whether a
// change is safe. failMode (FailMode) decides each of them, and only
// these, through one function (Settings.FailDecisionFor): no other code
// reads failMode or unhandledFailureMode. The failMode table of
// docs/config.md has one row per situation, named by its value, with the
// decision of each failMode (TestFailModeTableIsTheResolver).
type FailSituation string

const (
	// FailUnhandledChange: a change to an existing property that no check
	// understands (check unhandled, the engine).
	// checks.sameVersion.unhandledFailureMode and
	// checks.servedVersion.unhandledFailureMode override failMode for
	// their comparisons.
	FailUnhandledChange FailSituation = "unhandledChange"
	// FailUnreadableObjects: stored objects that cannot be read through
	// the CRD's conversion webhook, so what the update does to them is
	// unknown (checks existingResources and managedFields, live).
	FailUnreadableObjects FailSituation = "unreadableObjects"
	// FailOwnerReferencesUnread: the ownerReferences of some resources
	// cannot be listed (RBAC forbids it, an aggregated API is down), so the
	// dependents of a removed version there are unknown (check
	// ownerReferences, live).
	FailOwnerReferencesUnread FailSituation = "ownerReferencesUnread"
	// FailConversionUnverified: the conversion webhook the new CRD names
	// could not be asked (it does not answer: not deployed yet, its
	// Service without endpoints; the stored objects could not be listed;
	// a Service the run cannot reach), so what the new conversion does to
	// the stored objects is unknown (check conversionWebhook, live).
	FailConversionUnverified FailSituation = "conversionUnverified"
	// FailUnprovenStoredVersionsTrim: a write of a CRD's status that trims
	// status.storedVersions with no evidence the admission webhook can see
	// that no object is stored there (check storedVersionRemoval, the
	// webhook).
	FailUnprovenStoredVersionsTrim FailSituation = "unprovenStoredVersionsTrim"
	// FailWebhookReviewUnfinished: an admission review of the webhook that
	// cannot finish: an API error, a read its role does not allow, the
	// apiserver's timeout or liveChecksTimeout passing, a panic.
	FailWebhookReviewUnfinished FailSituation = "webhookReviewUnfinished"
	// FailRunUnfinished: a run of a deploy's preflight or of kapp tools
	// crd-upgrade-safety that cannot finish (an API error, the cluster
	// unreachable, a dry run that fails for another reason than a
	// refusal, liveChecksTimeout passing). It fails under either failMode:
	// only the webhook, which answers for every writer of CRDs, lets open
	// allow what it could not judge.
	FailRunUnfinished FailSituation = "runUnfinished"
)

// FailSituations lists every FailSituation, in the order of the docs'
// table.
var FailSituations = []FailSituation{
	FailUnhandledChange,
	FailUnreadableObjects,
	FailOwnerReferencesUnread,
	FailConversionUnverified,
	FailUnprovenStoredVersionsTrim,
	FailWebhookReviewUnfinished,
	FailRunUnfinished,
}

// FailDecision is what failMode decides in a situation: the words
// (a finding, an admission response, an error) are composed by the code
// that meets it.
type FailDecision string

const (
	// FailBlock blocks: an error finding, a denied review, a failed run.
	FailBlock FailDecision = "error"
	// FailWarn lets through with a warning: a warning finding, or a review
	// allowed with an admission warning.
	FailWarn FailDecision = "warning"
	// FailIgnore lets through silently: nothing is reported.
	FailIgnore FailDecision = "none"
)

// Enforcement is the enforcement a finding made under decision d gets:
// Strict, Warn or None.
func (d FailDecision) Enforcement() Enforcement {
	switch d {
	case FailWarn:
		return EnforcementWarn
	case FailIgnore:
		return EnforcementNone
	}
	return EnforcementStrict
}

// FailOutcome is a resolved failMode: the mode in force for the situation
// (messages name it) and what it decides.
type FailOutcome struct {
	Situation FailSituation
	Mode      FailMode
	Decision  FailDecision
}

// failDecisions is the one table of what each failMode decides, per
// situation.
var failDecisions = map[FailSituation]struct{ closed, open FailDecision }{
	FailUnhandledChange:            {closed: FailBlock, open: FailIgnore},
	FailUnreadableObjects:          {closed: FailBlock, open: FailWarn},
	FailOwnerReferencesUnread:      {closed: FailBlock, open: FailWarn},
	FailConversionUnverified:       {closed: FailBlock, open: FailWarn},
	FailUnprovenStoredVersionsTrim: {closed: FailBlock, open: FailWarn},
	FailWebhookReviewUnfinished:    {closed: FailBlock, open: FailWarn},
	FailRunUnfinished:              {closed: FailBlock, open: FailBlock},
}

// FailDecisionFor resolves failMode for situation s: the top-level
// failMode, or for FailUnhandledChange the unhandledFailureMode of vc (the
// checks of the comparison: sameVersion or servedVersion) when it is set;
// vc may be nil. Any mode but open is closed, and a situation the table
// does not know blocks.
func (c *Settings) FailDecisionFor(s FailSituation, vc *VersionChecks) FailOutcome {
	mode := c.FailMode
	if s == FailUnhandledChange && vc != nil && vc.UnhandledFailureMode != "" {
		mode = vc.UnhandledFailureMode
	}
	out := FailOutcome{Situation: s, Mode: mode, Decision: FailBlock}
	if d, ok := failDecisions[s]; ok {
		out.Decision = d.closed
		if mode == FailModeOpen {
			out.Decision = d.open
		}
	}
	return out
}
