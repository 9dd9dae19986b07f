package report

import (
	"fmt"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// Remedy is a finding's safe way forward as the JSON report carries it:
// the action (a stable ID), its text, and the facts it names.
type Remedy struct {
	// Action is the kind of way forward: migrateStorage, unserveFirst,
	// keepField, fixObjectsFirst, ... (docs/checks.md, per check).
	Action string `json:"action"`
	// Text says it in full.
	Text string `json:"text"`
	// Command is a command line that carries it out, where there is one.
	Command string `json:"command,omitempty"`
	// Objects are the first stored objects to act on, by name.
	Objects []string `json:"objects,omitempty"`
	// AcceptDataLoss: for a loss of stored data, the acceptDataLoss entry
	// of the settings that would accept exactly this loss.
	AcceptDataLoss *AcceptDataLoss `json:"acceptDataLoss,omitempty"`
}

// remedyOf is the JSON report's remedy of a finding (nil for none).
func remedyOf(f finding.Finding) *Remedy {
	if f.Remedy == nil {
		return nil
	}
	return &Remedy{Action: string(f.Remedy.Action), Text: RemedyText(f), Command: f.Remedy.Command, Objects: f.Remedy.Objects,
		AcceptDataLoss: acceptOf(f.Remedy.Accept)}
}

// RemedyText says a finding's safe way forward, "" when it has none; for
// a loss of stored data, followed by the act that accepts it
// (acceptText).
func RemedyText(f finding.Finding) string {
	text := actionText(f)
	if f.Remedy != nil && f.Remedy.Accept != nil {
		if text != "" {
			text += "; "
		}
		text += acceptText(f.Remedy.Accept)
	}
	return text
}

// acceptText says how to accept a loss of stored data: an acceptDataLoss
// entry in the settings that names it, never an annotation.
func acceptText(a *finding.AcceptHint) string {
	entry := "crd: " + a.CRD + ", check: " + a.Check
	if a.Version != "" {
		entry += ", version: " + a.Version
	}
	if a.Path != "" {
		entry += ", path: " + fmt.Sprintf("%q", a.Path)
	}
	objects := "N"
	if a.Counted {
		objects = fmt.Sprint(a.Objects)
	}
	entry += ", objects: " + objects + ", reason: ..., expires: YYYY-MM-DD"
	return "or, once losing this data is reviewed, accept exactly this loss in the settings: acceptDataLoss: [{" + entry + "}]"
}

// AcceptDataLoss is the acceptDataLoss entry a remedy offers, as the JSON
// report carries it: what the loss is, and the objects the run counted
// (omitted when it counted none).
type AcceptDataLoss struct {
	CRD     string `json:"crd"`
	Check   string `json:"check"`
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	Objects *int   `json:"objects,omitempty"`
}

// acceptOf is the JSON form of a remedy's acceptDataLoss entry.
func acceptOf(a *finding.AcceptHint) *AcceptDataLoss {
	if a == nil {
		return nil
	}
	out := &AcceptDataLoss{CRD: a.CRD, Check: a.Check, Version: a.Version, Path: a.Path}
	if a.Counted {
		n := a.Objects
		out.Objects = &n
	}
	return out
}

// actionText says the way forward of a finding's remedy action.
func actionText(f finding.Finding) string {
	r := f.Remedy
	if r == nil {
		return ""
	}
	objects := objectList(r)
	version := r.Version
	if version == "" {
		version = f.Version
	}
	switch r.Action {
	case finding.RemedyMigrateStorage:
		return fmt.Sprintf("keep %q, deploy the new storage version, run '%s', then remove %q", version, r.Command, version)
	case finding.RemedyProveMigration:
		return fmt.Sprintf("keep %q (status.storedVersions was trimmed %s, and nothing proves its objects were migrated), run '%s' to rewrite every object and record it, then remove %q",
			version, r.Detail, r.Command, version)
	case finding.RemedyMigrateBeforeTrim:
		return fmt.Sprintf("leave %q in status.storedVersions and run '%s': it rewrites every object at the storage version and trims status.storedVersions on that evidence", version, r.Command)
	case finding.RemedyWaitForMigration:
		return fmt.Sprintf("keep %q until the running migration (%s) is done and status.storedVersions no longer lists it, then remove it", version, r.Detail)
	case finding.RemedyUnserveFirst:
		return fmt.Sprintf("keep %q with served: false for a release (its clients get 404 Not Found and can move on), then remove it", version)
	case finding.RemedyDeprecateFirst:
		return fmt.Sprintf("keep %q served and mark it deprecated: true (with a deprecationWarning) in a release first, so its clients are warned; then stop serving it", version)
	case finding.RemedyKeepField:
		if objects != "" {
			return "keep the field (mark it deprecated in its description), or move the data out first: " + objects + " hold data there"
		}
		return "keep the field (mark it deprecated in its description), or move the data stored objects hold there to its replacement first"
	case finding.RemedyFixObjectsFirst:
		if objects != "" {
			return "fix the stored objects that fail the new constraint first (" + objects + "): the change is safe once none does; or keep the old constraint"
		}
		return "make sure no stored object fails it first (a live run or --objects names those that do), or keep the old constraint, or make the change in a new version"
	case finding.RemedyDefaultOrOptional:
		return "give the new required field a default, or keep it optional: objects stored without it are rejected on their next write"
	case finding.RemedyKeepDefault:
		if objects != "" {
			return "keep the old default, or change it in a new version: " + objects + " read differently"
		}
		return "keep the old default, or change it in a new version: objects that never set the field read differently"
	case finding.RemedyKeepUnknownFields:
		if objects != "" {
			return "keep the fields stored data uses (declare them, or keep x-kubernetes-preserve-unknown-fields) before pruning starts: " + objects + " hold data there"
		}
		return "declare the fields stored objects hold there, or keep x-kubernetes-preserve-unknown-fields, before pruning starts"
	case finding.RemedyNewVersion:
		return "make the change in a new version (with a conversion webhook where the schemas differ) and retire this one through its lifecycle (served: false, then removed)"
	case finding.RemedyNewCRD:
		return "the scope of a CRD cannot change in place: create a new CRD (another group or name) with the new scope and move the objects to it"
	case finding.RemedyConversionWebhook:
		return "add a conversion webhook (spec.conversion.strategy: Webhook) that converts between the two versions, or make their schemas compatible"
	case finding.RemedyKeepClientFacing:
		return "keep it in this version (clients depend on it); make the change in a new version"
	case finding.RemedyBackupObjects:
		return fmt.Sprintf("back up the custom resources ('%s'), then delete them explicitly before the CRD; or keep the CRD", r.Command)
	case finding.RemedyUpdateInPlace:
		return fmt.Sprintf("update the CRD in place instead of replacing it (%s): remove the kapp.k14s.io/update-strategy annotation, or fix what makes the apiserver refuse the update", r.Detail)
	case finding.RemedyMigrateManagedFields:
		of := "the stored objects"
		if objects != "" {
			of += " (" + objects + ")"
		}
		return fmt.Sprintf("keep %q and migrate the managedFields of %s to the storage version first: run '%s' (it migrates managedFields too), then remove it", version, of, r.Command)
	case finding.RemedyWebhookBeforeWrites:
		of := "the stored objects"
		if objects != "" {
			of += " (" + objects + ")"
		}
		return fmt.Sprintf("roll out the new conversion webhook and wait until it serves before the CRD changes (in a kapp deploy: "+
			"the change-group and change-rule annotations that order the webhook's workload first), so no write finds it down; "+
			"or first migrate the managedFields of %s to one version: run '%s' (%s)", of, r.Command, r.Detail)
	case finding.RemedyRepointOwners:
		of := "the dependents"
		if objects != "" {
			of += " (" + objects + ")"
		}
		return fmt.Sprintf("keep %q until the ownerReferences of %s name a version the CRD keeps (their controllers rewrite them, or patch their apiVersion), then remove it", version, of)
	case finding.RemedyReadDependents:
		if r.Command != "" {
			forbidden := r.Resources
			listed := strings.Join(forbidden[:min(len(forbidden), 3)], ", ")
			if len(forbidden) > 3 {
				listed += fmt.Sprintf(" and %d more", len(forbidden)-3)
			}
			return fmt.Sprintf("let the check list the %d %s it may not (%s), then try again: for the webhook, '%s' "+
				"(list on every resource); for a deploy or the tools command, an identity that may list them; or keep the removed versions",
				len(forbidden), plural.Of(len(forbidden), "resource", "resources"), listed, r.Command)
		}
		return "try again once the resources can be listed (an aggregated API that was down), or keep the removed versions"
	case finding.RemedyStoreEveryField:
		return fmt.Sprintf("declare the field in the storage version %q too (or make the version that has it the storage version and migrate), or add a conversion webhook that carries it", r.Version)
	case finding.RemedyApiserverReason:
		return "fix what the apiserver names: " + r.Detail
	case finding.RemedyReview:
		return "review the change by hand; once it is known to be safe, waive it with a reason (a waiver, or the waiver annotation)"
	case finding.RemedyOrderWorkloadFirst:
		return orderingText(f.Ordering)
	case finding.RemedyRemoveWaiver:
		return "remove the waiver: the change it waived is gone (a fingerprint changes with the change it names: waive the new one, after a review)"
	case finding.RemedyFixConversion:
		of := "the stored objects"
		if objects != "" {
			of = objects
		}
		return "fix the new conversion webhook for " + of + " before the CRD names it (carry every field across, convert between every pair of versions, keep stash annotations small), " +
			"and probe it in CI against sample objects ('kapp tools crd-upgrade-safety --objects ... --conversion-webhook-url ... --conversion-webhook-ca-file ...')"
	case finding.RemedyVerifyConversion:
		if len(r.Resources) > 0 {
			return fmt.Sprintf("let the check reach the conversion webhook through the apiserver's service proxy: grant its identity %s, then try again "+
				"(for the admission webhook: '%s', add --dependents if its role has it, or the Helm chart's and the Carvel package's conversionWebhookServices value; "+
				"for a deploy or the tools command, an identity that may); or probe it in CI against sample objects with a webhook run locally "+
				"('kapp tools crd-upgrade-safety --objects ... --conversion-webhook-url ... --conversion-webhook-ca-file ...')", strings.Join(r.Resources, ", "), r.Command)
		}
		return "deploy the new conversion webhook and wait for it before the CRD that names it changes (kapp's change-group and change-rule annotations), then try again; " +
			"or probe it in CI against sample objects with a webhook run locally ('kapp tools crd-upgrade-safety --objects ... --conversion-webhook-url ... --conversion-webhook-ca-file ...')"
	case finding.RemedyJudgeAtApplyTime:
		ci := "probe the new conversion code in CI against sample objects with the webhook run locally " +
			"('kapp tools crd-upgrade-safety --objects ... --conversion-webhook-url ... --conversion-webhook-ca-file ...')"
		if r.Detail != "" {
			return "nothing before the deploy: if the new code refuses or loses stored data, the admission webhook denies the CRD update at apply time, " +
				"after " + strings.Join(r.Resources, ", ") + " rolled out (the CRD and the objects stay as they are: fix the conversion and deploy again); " +
				"to know before the deploy, " + ci
		}
		return "install crd-upgrade-safety's admission webhook (docs/webhook.md) so the conversion is judged when kapp updates the CRD, " +
			"or " + ci + " and waive this finding once it passes"
	case finding.RemedyFixObjects:
		if objects != "" {
			return "fix " + objects + " before the update, or keep the schema that accepts them"
		}
		return "fix the stored objects before the update, or keep the schema that accepts them"
	}
	return ""
}

// objectList names a remedy's objects: "default/a, default/b and 3 more".
func objectList(r *finding.Remedy) string {
	if len(r.Objects) == 0 {
		return ""
	}
	s := strings.Join(r.Objects, ", ")
	if r.MoreObjects > 0 {
		s += fmt.Sprintf(" and %d more %s", r.MoreObjects, plural.Of(r.MoreObjects, "object", "objects"))
	}
	return s
}

// orderingText says how to make kapp roll out a conversion webhook's
// workloads before the CRD: the change-group annotation on each workload
// and the change-rule annotation on the CRD, or a kapp Config for the
// whole app.
func orderingText(o *finding.ConversionOrdering) string {
	if o == nil {
		return "make kapp roll out the conversion webhook's workloads before the CRD (kapp.k14s.io/change-group and kapp.k14s.io/change-rule annotations)"
	}
	var steps []string
	for _, w := range o.Unordered() {
		if w.GroupAnnotation != "" {
			steps = append(steps, fmt.Sprintf("on %s: %s: %q", w.Ref(), w.GroupAnnotation, o.Group))
		}
	}
	if o.RuleAnnotation != "" {
		steps = append(steps, fmt.Sprintf("on the CRD: %s: %q", o.RuleAnnotation, "upsert after upserting "+o.Group))
	}
	return "make kapp roll out the webhook's new code and wait for it before the CRD changes: add the annotations " +
		strings.Join(steps, "; ") + " (or, for the whole app, a kapp Config with changeGroupBindings and changeRuleBindings: examples/conversion-ordering)"
}
