package evaluation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The apiserverRejects check, as an evaluation runs it: which request of a
// change the apiserver validates, offline with its own library
// (apivalidation.PrepareCRD) or as a server-side dry run, and what a
// refusal means for kapp (a finding, or a replace under
// fallback-on-replace).

// offlineValidation is the apiserver's validation of one pair, run offline
// with the apiextensions library.
type offlineValidation struct {
	ctx              context.Context
	p                Pair
	cfg              *config.Settings
	validate         bool
	oldFromFiles     bool
	unchanged        bool
	prepOld, prepNew func() *apivalidation.PreparedCRD
}

// newOfflineValidation prepares the validations of a pair. Each CRD is
// converted for the apiserver's validation once, however many validations
// it goes through, and only when one needs it.
func newOfflineValidation(ctx context.Context, p Pair, oldFromFiles bool, cfg *config.Settings) *offlineValidation {
	v := &offlineValidation{
		ctx: ctx, p: p, cfg: cfg,
		validate:     cfg.Checks.CRD.ApiserverRejects.Enabled,
		oldFromFiles: oldFromFiles,
		prepOld:      sync.OnceValue(func() *apivalidation.PreparedCRD { return apivalidation.PrepareCRD(p.Old) }),
		prepNew:      sync.OnceValue(func() *apivalidation.PreparedCRD { return apivalidation.PrepareCRD(p.New) }),
		// The same object on both sides: the old and new inputs hold the
		// same document (the tools command decodes identical documents
		// once). kapp sends no update for it, and creating it is what the
		// old CRD's own validation checks.
		unchanged: p.Old == p.New,
	}
	if v.unchanged {
		v.prepNew = v.prepOld
	}
	return v
}

// finish validates the change as the apiserver does. For
// fallback-on-replace it decides whether kapp falls back to a replace
// (replace says why): the apiserver refuses an update its own validation
// rejects with status 422 Invalid, which is the only error kapp falls back
// on. A replace ends with a create, validated as such.
//
// A create or plain update that a server-side dry run will send (live, the
// pair has Send) is left to it: the apiserver runs this same validation on
// the request, in its own version, the one that decides; repeating it here
// would double the work of a large deploy. What the dry run cannot show is
// still validated here: the create that follows the delete of a replace,
// and whether fallback-on-replace falls back.
//
// An old CRD read from a file is validated on its own (a warning when the
// apiserver would refuse to create it) only where that says something: when
// it is the new document too (then that validation is the only one), or to
// explain a refusal. An update the apiserver accepts needs no other
// validation: on 300 real CRDs that halved the offline command's work.
func (v *offlineValidation) finish(live bool) (rejected bool, replace string, findings []finding.Finding) {
	p, cfg, ctx := v.p, v.cfg, v.ctx
	dryRunValidates := live && p.Send != nil && (p.Old == nil || p.Strategy == StrategyUpdate)
	// The old CRD's own validation, once, when it is needed.
	explainOld := p.Old != nil && v.oldFromFiles && v.validate
	oldErrs := sync.OnceValue(func() field.ErrorList { return v.prepOld().Create(ctx) })
	createErrs := func() []apivalidation.Rejection {
		if v.unchanged {
			return apivalidation.Rejections(oldErrs())
		}
		return apivalidation.Rejections(v.prepNew().Create(ctx))
	}
	updateErrs := func() []apivalidation.Rejection {
		return apivalidation.Rejections(v.prepNew().Update(ctx, v.prepOld()))
	}
	// The apiserver's warnings on the request, once it accepts it.
	createWarnings := func() []string { return v.prepNew().WarningsOnCreate(ctx) }
	updateWarnings := func() []string { return v.prepNew().WarningsOnUpdate(ctx, v.prepOld()) }

	var verb string
	var errs []apivalidation.Rejection
	var warnings func() []string
	refused := false // a validation here refused the change
	switch {
	case p.Old == nil:
		if v.validate && !dryRunValidates {
			verb, errs, warnings = "create", createErrs(), createWarnings
		}
	case p.Strategy == StrategyAlwaysReplace:
		replace = "update strategy " + StrategyAlwaysReplace
		if v.validate {
			verb, errs, warnings = "create that follows the delete ("+replace+")", createErrs(), createWarnings
		}
	case p.Strategy == StrategyFallbackOnReplace && (v.validate || cfg.Checks.CRD.CRDDeletion.Enabled):
		if updateRefused := updateErrs(); len(updateRefused) > 0 {
			refused = true
			replace = fmt.Sprintf("update strategy %s, and the apiserver refuses the update (%s)",
				StrategyFallbackOnReplace, describe(updateRefused))
			if v.validate {
				verb, errs, warnings = "create that follows the delete ("+StrategyFallbackOnReplace+")", createErrs(), createWarnings
			}
		} else if v.validate && !(live && p.Send != nil) {
			// The update goes through: a dry run (live) gives its
			// warnings, the library those of a tools run.
			verb, warnings = "update", updateWarnings
		}
	default:
		if v.validate && !v.unchanged && !dryRunValidates {
			verb, errs, warnings = "update", updateErrs(), updateWarnings
		}
	}
	switch {
	case len(errs) > 0:
		findings = append(findings, apivalidation.Rejected(p.New.Name, verb, errs, cfg)...)
		rejected, refused = true, true
	case warnings != nil:
		findings = append(findings, apivalidation.Warned(p.New.Name, verb, warnings(), cfg)...)
	}
	if explainOld && (v.unchanged || refused) {
		findings = append(findings, apivalidation.InvalidOld(p.New.Name, oldErrs(), cfg)...)
	}
	return rejected, replace, findings
}

// needsDryRun: the dry run reports what the apiserver refuses
// (apiserverRejects), and it tells whether fallback-on-replace falls back
// to a replace (crdDeletion).
func needsDryRun(p Pair, cfg *config.Settings) bool {
	return cfg.Checks.CRD.ApiserverRejects.Enabled ||
		(p.Old != nil && p.Strategy == StrategyFallbackOnReplace && cfg.Checks.CRD.CRDDeletion.Enabled)
}

// describe renders the first rejection, and how many more there are.
func describe(rs []apivalidation.Rejection) string {
	s := rs[0].Message
	if f := apivalidation.V1FieldPath(rs[0].Field); f != "" {
		s = f + ": " + s
	}
	if len(rs) > 1 {
		s += fmt.Sprintf("; and %d more", len(rs)-1)
	}
	return s
}

// dryRunFindings sends the request kapp would send first for the pair as a
// server-side dry run: a create for a new CRD, the delete of an
// always-replace, an update otherwise. A refusal is an apiserverRejects
// error finding (rejected), the apiserver's warnings on an accepted request
// are apiserverRejects warnings, except that an update with fallback-on-replace that is refused
// as invalid (422) is not refused for kapp: it replaces the CRD, and the
// returned replace says why. A denial by the CRDUpgradeSafety admission
// webhook (webhookDenialOf) is returned as denial, not rejected: the
// apiserver accepts the CRD, and the run's own checks judge what the
// webhook judged (the caller says once what is left: webhookDenial.findings).
// Any other error (the apiserver did not answer, a conflict, 5xx) is
// returned, naming the CRD.
func dryRunFindings(ctx context.Context, p Pair, cfg *config.Settings,
	cluster Cluster) (findings []finding.Finding, rejected bool, replace string, denial *webhookDenial, err error) {

	verb := VerbUpdate
	switch {
	case p.Old == nil:
		verb = VerbCreate
	case p.Strategy == StrategyAlwaysReplace:
		verb = VerbDelete
	}
	how := string(verb) + " (server-side dry run)"
	warnings, sendErr := cluster.DryRun(ctx, verb, p.Send)
	if sendErr == nil {
		return apivalidation.Warned(p.New.Name, how, notOurs(warnings), cfg), false, "", nil, nil
	}
	rs, ok := refusal(sendErr)
	if !ok {
		if de := deadlineError(ctx, sendErr, ""); de != nil {
			sendErr = de
		}
		return nil, false, "", nil, fmt.Errorf("server-side dry run of the %s of CRD %s: %w", verb, p.New.Name, sendErr)
	}
	if d := webhookDenialOf(sendErr, how, verb == VerbDelete); d != nil {
		return nil, false, "", d, nil
	}
	if verb == VerbUpdate && p.Strategy == StrategyFallbackOnReplace && apierrors.IsInvalid(sendErr) {
		return nil, false, fmt.Sprintf("update strategy %s, and the apiserver refuses the update (server-side dry run: %s)",
			StrategyFallbackOnReplace, describe(rs)), nil, nil
	}
	return apivalidation.Rejected(p.New.Name, how, rs, cfg), true, "", nil, nil
}

// webhookDenial is a refusal of a dry run by the CRDUpgradeSafety
// admission webhook, recognised by its data: the error findings of the
// webhook's review, as the causes of its status carry them
// (config.FindingCause, config.FindingFacts, report.DenialCauses).
type webhookDenial struct {
	// how is the request, as apivalidation.Rejected's verb; replace:
	// the request is the delete of a replace (update strategy
	// always-replace), what the webhook judges as a deletion.
	how     string
	replace bool
	// crd is the CRD the webhook judged (the status details' name).
	crd    string
	denied []finding.DeniedFinding
}

// webhookDenialOf returns the denial of err, a refusal, when the
// CRDUpgradeSafety admission webhook denied the request for its findings
// (its status carries config.FindingCause causes; the apiserver keeps a
// webhook's status details, k8s.io/apiserver's webhookerrors.ToStatusErr);
// nil otherwise.
func webhookDenialOf(err error, how string, replace bool) *webhookDenial {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return nil
	}
	var d *webhookDenial
	for _, c := range st.Status().Details.Causes {
		if c.Type != metav1.CauseType(config.FindingCause) {
			continue
		}
		if d == nil {
			d = &webhookDenial{how: how, replace: replace, crd: st.Status().Details.Name}
		}
		d.denied = append(d.denied, finding.DeniedFinding{FindingFacts: config.ParseFindingFacts(c.Field), Line: c.Message})
	}
	return d
}

// findings says the denial once, after the pair's own findings (judged:
// impacts applied). Each of the webhook's findings is matched, by facts,
// to the pair's own finding of the same change: the same
// fingerprint, or, for the delete of a replace, the pair's crdDeletion
// finding of the replace (the webhook sees the loss from the delete side:
// the same CRD, check and objects, another change and so another
// fingerprint; a waiver of the one never names the other). Those the pair
// reports as errors are not repeated; an apiserverRejects finding names
// the rest (apivalidation.DeniedByWebhook), each with the pair's own
// finding when it is a warning here, none when nothing is left. A nil
// denial has no findings. One pass over each side: no lookup per pair.
func (d *webhookDenial) findings(crdName string, own []finding.Finding, cfg *config.Settings) []finding.Finding {
	if d == nil {
		return nil
	}
	// The pair's own findings by fingerprint, and its crdDeletion finding
	// (a replace's), an error one before a warning.
	byFP := make(map[string]*finding.Finding, len(own))
	var deletion *finding.Finding
	better := func(have, f *finding.Finding) bool {
		return have == nil || have.Severity != finding.SeverityError && f.Severity == finding.SeverityError
	}
	for i := range own {
		f := &own[i]
		if f.Fingerprint == "" || f.CRD != crdName {
			continue
		}
		if better(byFP[f.Fingerprint], f) {
			byFP[f.Fingerprint] = f
		}
		if f.Check == config.CheckCRDDeletion && better(deletion, f) {
			deletion = f
		}
	}
	var rest []finding.DeniedFinding
	for _, df := range d.denied {
		here := byFP[df.Fingerprint]
		if here == nil && d.replace && df.Check == config.CheckCRDDeletion && (d.crd == "" || d.crd == crdName) {
			here = deletion
		}
		if here != nil && here.Severity == finding.SeverityError {
			continue
		}
		if here != nil {
			c := *here
			df.Here = &c
		}
		rest = append(rest, df)
	}
	return apivalidation.DeniedByWebhook(crdName, d.how, rest, cfg)
}

// notOurs drops the warnings of the CRDUpgradeSafety admission webhook
// (they start with the check's name): in a dry run they repeat, as the
// apiserver's, what this evaluation reports itself. A denial by the webhook
// is kept: it is what the apiserver will answer to the update.
func notOurs(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		if !strings.HasPrefix(w, config.CheckName+": ") {
			out = append(out, w)
		}
	}
	return out
}

// dryRunUnsupported is how the apiserver's admission says that a webhook
// cannot be called on a dry run (k8s.io/apiserver's
// webhookerrors.NewDryRunUnsupportedErr): external text, the one kind a
// decision may read.
const dryRunUnsupported = "does not support dry run"

// dryRunUnsupportedBy tells whether the apiserver's status s says that a
// webhook cannot be called on a dry run: the one decision of the
// evaluation that reads words (the apiserver gives no reason or cause for
// it), pinned to the apiserver's constructor by
// TestDryRunUnsupportedIsTheAPIServersWords.
func dryRunUnsupportedBy(s metav1.Status) bool {
	return strings.Contains(s.Message, dryRunUnsupported)
}

// refusal reports whether err is the apiserver refusing a request it
// understood (validation, admission webhooks and policies, authorization:
// status 400, 403, 413 or 422), as opposed to failing to answer it or a
// state that may pass on a retry (conflict, not found, too many requests,
// 5xx), and returns its reasons: the status causes when they carry a
// message, else the status message.
func refusal(err error) ([]apivalidation.Rejection, bool) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return nil, false
	}
	s := st.Status()
	switch s.Code {
	case 400, 403, 413, 422:
	default:
		return nil, false
	}
	// A webhook that cannot run without side effects makes the dry run
	// fail, not the request: the dry run cannot tell. The apiserver says so
	// only in its message (TestDryRunUnsupportedIsTheAPIServersWords pins
	// the words to its own constructor).
	if dryRunUnsupportedBy(s) {
		return nil, false
	}
	var rs []apivalidation.Rejection
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message != "" {
				rs = append(rs, apivalidation.Rejection{Field: c.Field, Message: c.Message})
			}
		}
	}
	if len(rs) == 0 {
		rs = []apivalidation.Rejection{{Message: s.Message}}
	}
	return rs, true
}
