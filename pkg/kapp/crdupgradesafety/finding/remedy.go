package finding

// RemedyAction is a kind of safe way forward from a finding. The words of
// each are composed at the edge (pkg/kapp/report), from the Remedy's
// facts; docs/checks.md gives each check's remedy.
type RemedyAction string

const (
	// RemedyMigrateStorage: migrate the objects stored in Version to the
	// new storage version (Command), then remove it.
	RemedyMigrateStorage RemedyAction = "migrateStorage"
	// RemedyWaitForMigration: a storage version migration is running
	// (Detail names it); remove Version once storedVersions drops it.
	RemedyWaitForMigration RemedyAction = "waitForMigration"
	// RemedyProveMigration: status.storedVersions no longer lists Version,
	// yet nothing proves its objects were migrated (a trim by hand): keep
	// Version and run the migrate command (Command), which rewrites every
	// object and records it, before removing it.
	RemedyProveMigration RemedyAction = "proveMigration"
	// RemedyMigrateBeforeTrim: a write of status.storedVersions drops
	// Version with no completed migration on record: leave it listed and
	// run the migrate command (Command), which trims it on evidence.
	RemedyMigrateBeforeTrim RemedyAction = "migrateBeforeTrim"
	// RemedyUnserveFirst: keep Version with served: false for a release,
	// then remove it.
	RemedyUnserveFirst RemedyAction = "unserveFirst"
	// RemedyDeprecateFirst: keep Version served and mark it deprecated:
	// true (with a deprecationWarning) in a release, then stop serving it.
	RemedyDeprecateFirst RemedyAction = "deprecateFirst"
	// RemedyKeepField: keep the field (deprecated in its description), or
	// move the data the Objects hold there first.
	RemedyKeepField RemedyAction = "keepField"
	// RemedyFixObjectsFirst: a constraint tightened: the change is safe
	// once no stored object violates it (Objects: those that do), or make
	// it in a new version.
	RemedyFixObjectsFirst RemedyAction = "fixObjectsFirst"
	// RemedyDefaultOrOptional: give the new required field a default, or
	// keep it optional.
	RemedyDefaultOrOptional RemedyAction = "defaultOrOptional"
	// RemedyKeepDefault: keep the old default (Objects: those that read
	// differently), or change it in a new version.
	RemedyKeepDefault RemedyAction = "keepDefault"
	// RemedyKeepUnknownFields: keep x-kubernetes-preserve-unknown-fields,
	// or declare every field stored objects hold there first.
	RemedyKeepUnknownFields RemedyAction = "keepUnknownFields"
	// RemedyNewVersion: the change cannot be made to an existing version:
	// make it in a new version (with a conversion webhook where the schemas
	// differ), and retire the old one through its lifecycle.
	RemedyNewVersion RemedyAction = "newVersion"
	// RemedyNewCRD: the scope of a CRD cannot change in place: a new CRD
	// (another group or name), and the objects moved to it.
	RemedyNewCRD RemedyAction = "newCRD"
	// RemedyConversionWebhook: two served versions differ: add a
	// conversion webhook, or make the schemas compatible.
	RemedyConversionWebhook RemedyAction = "conversionWebhook"
	// RemedyKeepClientFacing: keep what clients use (a subresource, a
	// selectable field, list map keys) in this version; change it in a new
	// version.
	RemedyKeepClientFacing RemedyAction = "keepClientFacing"
	// RemedyBackupObjects: back up the objects (Command) and delete them
	// explicitly first, or keep the CRD.
	RemedyBackupObjects RemedyAction = "backupObjects"
	// RemedyUpdateInPlace: kapp would replace the CRD (Detail says why):
	// update it in place instead.
	RemedyUpdateInPlace RemedyAction = "updateInPlace"
	// RemedyMigrateManagedFields: migrate the managedFields entries of the
	// objects (Objects) from Version to the storage version (Command) before
	// the version is removed.
	RemedyMigrateManagedFields RemedyAction = "migrateManagedFields"
	// RemedyRepointOwners: keep Version until the dependents'
	// ownerReferences name a version the CRD keeps.
	RemedyRepointOwners RemedyAction = "repointOwners"
	// RemedyReadDependents: the ownerReferences of some resources could
	// not be read (Detail: those the identity may not list), so dependents
	// of the removed versions there are unknown: let the check list them
	// (Command: the webhook's role that grants it), then judge again; or
	// keep the versions.
	RemedyReadDependents RemedyAction = "readDependents"
	// RemedyStoreEveryField: under conversion None, the storage version
	// (Version) must declare every field a served version does: declare it
	// there (or make the version that has it the storage version and
	// migrate), or add a conversion webhook.
	RemedyStoreEveryField RemedyAction = "storeEveryField"
	// RemedyApiserverReason: fix what the apiserver names (Detail).
	RemedyApiserverReason RemedyAction = "apiserverReason"
	// RemedyReview: no check understands the change: review it, and waive
	// it with a reason once it is known to be safe.
	RemedyReview RemedyAction = "review"
	// RemedyFixObjects: fix the stored objects named (Objects) before the
	// update, or keep the schema that accepts them.
	RemedyFixObjects RemedyAction = "fixObjects"
	// RemedyFixConversion: fix the new conversion webhook for the objects
	// named (Objects) before the CRD names it (carry every field across,
	// convert between every pair of versions, keep stash annotations
	// small), and probe it in CI against sample objects.
	RemedyFixConversion RemedyAction = "fixConversion"
	// RemedyVerifyConversion: the new conversion webhook could not be
	// asked (or only in part, within a budget): deploy it, and wait for
	// it, before the CRD that names it changes (kapp change groups and
	// rules), or probe it in CI with a webhook run locally. When the
	// apiserver's service proxy refused the identity, Resources names the
	// grant it lacks (create on services/proxy) and Command the webhook's
	// role that grants it.
	RemedyVerifyConversion RemedyAction = "verifyConversion"
	// RemedyJudgeAtApplyTime: the new conversion code ships in the same
	// deploy (Resources: its workloads, rolled out before the CRD): the
	// admission webhook (Detail, "" when none is installed) judges it when
	// kapp updates the CRD; to know before the deploy, probe it in CI.
	RemedyJudgeAtApplyTime RemedyAction = "judgeAtApplyTime"
	// RemedyOrderWorkloadFirst: make kapp roll out the workloads that serve
	// the CRD's conversion webhook (Resources), and wait for them, before
	// it updates the CRD: the change group (Detail) on each workload and
	// the change rule on the CRD (Finding.Ordering names the annotations),
	// or a kapp Config that does it for the whole app.
	RemedyOrderWorkloadFirst RemedyAction = "orderWorkloadFirst"
	// RemedyRemoveWaiver: a stale waiver waives nothing: remove it.
	RemedyRemoveWaiver RemedyAction = "removeWaiver"
	// RemedyWebhookBeforeWrites: the conversion webhook changes while
	// objects (Objects) have managedFields entries at several versions,
	// which a write while it is down drops (Detail: the issue): roll the
	// webhook out and wait for it before the CRD changes, or migrate their
	// managedFields to one version (Version) first (Command).
	RemedyWebhookBeforeWrites RemedyAction = "webhookBeforeWrites"
)

// Remedy is a safe way forward from a finding: what to do instead, or
// first. Its facts are specific to the finding and, where objects were
// read, to the cluster.
type Remedy struct {
	Action RemedyAction
	// Version is the version the remedy is about, where it names one.
	Version string
	// Command is a command line that carries the remedy out, where there
	// is one.
	Command string
	// Detail is a fact the remedy quotes: the apiserver's reason, the
	// running migration.
	Detail string
	// Objects are the first stored objects to act on (by name), with
	// MoreObjects how many others; filled once objects are read.
	Objects     []string
	MoreObjects int
	// Accept: for a loss of stored data that a waiver was refused for, or
	// that an acceptance names but does not cover, the acceptDataLoss
	// entry of the settings that would accept exactly this loss, once
	// reviewed (the act that passes it: no waiver does); nil otherwise.
	Accept *AcceptHint
	// Resources are the resources the remedy is about (readDependents:
	// those the check may not list), sorted.
	Resources []string
}

// RemedyActionOf is the generic remedy of a check, its descriptor's
// ("" for a check no loaded package describes).
func RemedyActionOf(check string) RemedyAction {
	if d := DescriptorOf(check); d != nil {
		return d.Remedy
	}
	return ""
}

// DefaultRemedy is the remedy of a finding of check that its check did not
// make more specific (its descriptor's); nil for a check without one.
func DefaultRemedy(check, version string) *Remedy {
	a := RemedyActionOf(check)
	if a == "" {
		return nil
	}
	return &Remedy{Action: a, Version: version}
}

// withObjects returns a copy of r naming the objects an impact affects: the
// examples of its effects, deduplicated, in order.
func (r *Remedy) WithObjects(imp *Impact) *Remedy {
	if r == nil || imp == nil || imp.Affected == 0 {
		return r
	}
	out := *r
	out.Objects = nil
	seen := map[string]bool{}
	for _, e := range imp.Effects {
		for _, ex := range e.Examples {
			if !seen[ex.Object] && len(out.Objects) < MaxExamples {
				seen[ex.Object] = true
				out.Objects = append(out.Objects, ex.Object)
			}
		}
	}
	out.MoreObjects = max(imp.Affected-len(out.Objects), 0)
	return &out
}

// AcceptHint is the acceptDataLoss entry that would accept a loss: its
// CRD, check, version and path, and the objects the run counted (Counted
// false: none were counted).
type AcceptHint struct {
	CRD, Check, Version, Path string
	Objects                   int
	Counted                   bool
}

// ConversionProxyRBACCommand generates and applies the webhook's role
// with create on services/proxy for the conversion webhooks' Services of
// the cluster's CRDs (add --dependents if the role had it).
const ConversionProxyRBACCommand = "kapp tools crd-upgrade-safety-webhook rbac | kapp deploy -a crd-upgrade-safety-rbac -f - -y"

// DependentsRBACCommand regenerates the webhook's role with list on every
// resource, where dependents live, and applies it (docs/webhook.md,
// "Least privilege").
const DependentsRBACCommand = "kapp tools crd-upgrade-safety-webhook rbac --dependents | kapp deploy -a crd-upgrade-safety-rbac -f - -y"
