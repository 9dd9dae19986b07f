// Package config holds the typed configuration of the CRDUpgradeSafety
// preflight check: the `config` map of its `preflightRules` entry in a kapp
// Config, decoded strictly, with defaults.
package config

import "time"

// CheckName is the name of the check in kapp's preflight registry, in
// --preflight and in a kapp Config's preflightRules; lines the check prints
// start with it.
const CheckName = "CRDUpgradeSafety"

// FindingCause is the type of the status causes (metav1.StatusCause.Type)
// by which the CRDUpgradeSafety admission webhook carries the error
// findings of a denial as data: one cause per finding, its facts
// (FindingFacts: fingerprint, check, version, field) in the cause's field,
// its line in the cause's message (the first 20). The apiserver passes
// a webhook's status on to the client (k8s.io/apiserver's
// webhookerrors.ToStatusErr prefixes the message and keeps the details),
// so a preflight whose server-side dry run the webhook denies recognises
// the denial and its findings by these causes, never by its words
// (docs/webhook.md).
const FindingCause = "CRDUpgradeSafetyFinding"

// Check IDs. They name findings in messages and JSON and key the
// configuration. They live here, beside the configuration they key, so that
// the decoder can validate exemption lists without importing the engine.
const (
	// CRD-level checks (checks.crd.*).
	CheckScope                = "scope"
	CheckStoredVersionRemoval = "storedVersionRemoval"
	CheckServedVersionRemoval = "servedVersionRemoval"
	CheckExistingFieldRemoval = "existingFieldRemoval"
	CheckSubresources         = "subresources"
	CheckSelectableFields     = "selectableFields"
	CheckExistingResources    = "existingResources"
	CheckCRDDeletion          = "crdDeletion"
	CheckAPIServerRejects     = "apiserverRejects"
	CheckStoragePruning       = "storagePruning"
	CheckManagedFields        = "managedFields"
	CheckOwnerReferences      = "ownerReferences"
	CheckVersionLifecycle     = "versionLifecycle"
	// CheckConversionOrdering: in a kapp deploy, a CRD update that needs
	// its conversion webhook's new code is not ordered after the rollout of
	// the workload that serves the webhook (the kapp hook only).
	CheckConversionOrdering = "conversionOrdering"
	CheckConversionWebhook  = "conversionWebhook"

	// Property checks (checks.sameVersion.* and checks.servedVersion.*).
	CheckRequired              = "required"
	CheckType                  = "type"
	CheckEnum                  = "enum"
	CheckDefault               = "default"
	CheckMinimum               = "minimum"
	CheckMinLength             = "minLength"
	CheckMinItems              = "minItems"
	CheckMinProperties         = "minProperties"
	CheckMaximum               = "maximum"
	CheckMaxLength             = "maxLength"
	CheckMaxItems              = "maxItems"
	CheckMaxProperties         = "maxProperties"
	CheckPattern               = "pattern"
	CheckFormat                = "format"
	CheckNullable              = "nullable"
	CheckExclusiveMinimum      = "exclusiveMinimum"
	CheckExclusiveMaximum      = "exclusiveMaximum"
	CheckMultipleOf            = "multipleOf"
	CheckUniqueItems           = "uniqueItems"
	CheckAdditionalProperties  = "additionalProperties"
	CheckPreserveUnknownFields = "preserveUnknownFields"
	CheckIntOrString           = "intOrString"
	CheckListType              = "listType"
	CheckMapType               = "mapType"
	CheckCELValidation         = "celValidation"
	CheckAllOf                 = "allOf"
	CheckAnyOf                 = "anyOf"
	CheckOneOf                 = "oneOf"
	CheckNot                   = "not"
	CheckEmbeddedResource      = "embeddedResource"

	// Version-pair checks (checks.servedVersion) and the final pass.
	CheckServedVersion = "servedVersion"
	CheckUnhandled     = "unhandled"

	// CheckStaleWaiver: a waiver of a CRD the run evaluated matches none
	// of its findings (a warning). Not configurable, and not waivable.
	CheckStaleWaiver = "staleWaiver"
)

// CRDCheckIDs are the checks configured under checks.crd, sorted.
var CRDCheckIDs = []string{
	CheckAPIServerRejects, CheckConversionOrdering, CheckConversionWebhook, CheckCRDDeletion, CheckExistingFieldRemoval, CheckExistingResources,
	CheckManagedFields, CheckOwnerReferences, CheckScope, CheckSelectableFields, CheckServedVersionRemoval,
	CheckStoragePruning, CheckStoredVersionRemoval, CheckSubresources, CheckVersionLifecycle,
}

// PropertyCheckIDs are the checks configured under checks.sameVersion and
// checks.servedVersion, sorted.
var PropertyCheckIDs = []string{
	CheckAdditionalProperties, CheckAllOf, CheckAnyOf, CheckCELValidation,
	CheckDefault, CheckEmbeddedResource, CheckEnum, CheckExclusiveMaximum, CheckExclusiveMinimum,
	CheckFormat, CheckIntOrString, CheckListType, CheckMapType,
	CheckMaxItems, CheckMaxLength, CheckMaxProperties, CheckMaximum,
	CheckMinItems, CheckMinLength, CheckMinProperties, CheckMinimum,
	CheckMultipleOf, CheckNot, CheckNullable, CheckOneOf, CheckPattern,
	CheckPreserveUnknownFields, CheckRequired, CheckType, CheckUniqueItems,
}

// Mode says what findings do to a deploy.
type Mode string

const (
	ModeError Mode = "error" // findings fail the deploy
	ModeWarn  Mode = "warn"  // findings are printed as warnings; the deploy goes on
)

// FailMode says what the check does where it cannot tell whether a change
// is safe: closed blocks, open lets through. The situations it decides are
// named by FailSituation (an unhandled change, unreadable stored objects,
// unread ownerReferences, an unproven trim of status.storedVersions, an
// unfinished webhook review, an unfinished run) and resolved in one place,
// Settings.FailDecisionFor, whose table docs/config.md shows. In a deploy
// and in kapp tools crd-upgrade-safety, a run that cannot finish
// (FailRunUnfinished) always fails, whatever failMode says: nothing is
// applied.
type FailMode string

const (
	FailModeClosed FailMode = "closed" // block: an error finding, or a denied review
	FailModeOpen   FailMode = "open"   // let through: no finding or a warning, or an allowed review
)

// Enforcement is a per-change strategy of crd-diff's configuration,
// extended with Warn.
type Enforcement string

const (
	// EnforcementStrict reports the change as an error finding (a warning
	// under mode warn or an exemption).
	EnforcementStrict Enforcement = "Strict"
	// EnforcementWarn reports the change as a warning finding, even under
	// mode error: for changes that invalidate no stored object.
	EnforcementWarn Enforcement = "Warn"
	// EnforcementNone does not report the change.
	EnforcementNone Enforcement = "None"
	// EnforcementIfPreviouslyConstrained is enum.additionEnforcement only:
	// an enum added where none was is reported, values added to an
	// existing enum are not.
	EnforcementIfPreviouslyConstrained Enforcement = "IfPreviouslyConstrained"
)

// Reports tells whether a change under enforcement e is reported at all
// (Strict or Warn; None and the empty value are not).
func (e Enforcement) Reports() bool {
	return e == EnforcementStrict || e == EnforcementWarn
}

// Settings is the whole, decoded configuration of the CRDUpgradeSafety
// check: the `config` of its preflightRules entry, or the file named by
// KAPP_CRD_UPGRADE_SAFETY_CONFIG.
type Settings struct {
	Mode Mode
	// FailMode decides the situations where the check cannot tell
	// (FailSituation); read it through FailDecisionFor.
	FailMode FailMode
	// MaxFindingsPerCRD bounds how many findings are printed per CRD; the
	// rest are counted. 0 means unbounded.
	MaxFindingsPerCRD int
	// LiveChecksTimeout bounds how long one run waits on the cluster
	// (fetching live CRDs, server-side dry runs, listing and counting
	// custom resources); when it passes, the run fails.
	LiveChecksTimeout time.Duration
	// UnaffectedEnforcement is what a finding does that the read of the
	// stored objects (a cluster, or --objects samples) proved to affect
	// none of them: Strict (the default) keeps its severity, Warn makes it
	// a warning. It never applies where the read cannot see the risk
	// (removed versions, scope, list map keys, subresources, selectable
	// fields, CRD deletion, apiserverRejects, unhandled changes), and
	// changes nothing when no object was read.
	UnaffectedEnforcement Enforcement
	// AlphaVersionEnforcement is what a finding does that is about an
	// alpha version (v1alpha1, v2alpha3: the apiserver's version naming):
	// Strict (the default) keeps its severity, Warn makes an error a
	// warning, as Config Connector treats its alpha CRDs. It never applies
	// to findings about the whole CRD, about a pair of versions of which
	// one is not alpha, or about stored data and objects that exist
	// (storedVersionRemoval, storagePruning, the live checks,
	// apiserverRejects, and a finding whose read of the stored objects
	// found data pruned).
	AlphaVersionEnforcement Enforcement
	Checks                  Checks
	// Waivers waive findings after a human review (the key waivers, and
	// its alias exemptions; the waiver annotations of a run's CRDs are
	// added to a copy by WithWaivers). See Waiver.
	Waivers []Waiver
	// AcceptDataLoss are the accepted losses of stored data (the key
	// acceptDataLoss): the only way a finding that loses stored data
	// passes. See Acceptance.
	AcceptDataLoss []Acceptance
	// AnnotationWaivers says which checks the waiver annotations of a CRD
	// may waive (the key annotationWaivers); nil: the run's default (see
	// AnnotationWaivers).
	AnnotationWaivers *AnnotationWaivers
	// Webhook holds what only the admission webhook (kapp tools
	// crd-upgrade-safety-webhook) reads; a deploy and the tools command
	// ignore it.
	Webhook WebhookSettings
	// KubeVersion is the Kubernetes version judged for where the verdict
	// depends on it. It is no key of the configuration: a live run sets
	// it from the apiserver's version, an offline run from
	// --kube-version; the zero value is DefaultKubeVersion.
	KubeVersion KubeVersion `json:"-"`
	// Now is the time waivers are judged at (Waiver.Expires): no key of
	// the configuration; the zero value is the time of the run.
	Now time.Time `json:"-"`
	// Live: the run reads a cluster (a deploy, a webhook review, the tools
	// command against a cluster), so a loss it cannot count is never
	// accepted (Acceptance). No key of the configuration: the evaluation
	// sets it.
	Live bool `json:"-"`
}

// WebhookSettings are the settings of the admission webhook alone (the
// key webhook).
type WebhookSettings struct {
	// RevealStoredValues: the webhook's denials and warnings show what the
	// stored objects hold where a finding names them (the value refused,
	// pruned or defaulted, and the apiserver's detail of a rejection,
	// which may quote it). false (the default) names the objects, the
	// field and the rule only: the webhook answers whoever can reach it,
	// while the stored objects are readable only by whom RBAC allows. Set
	// it on a cluster whose writers of CRDs may read every custom resource.
	RevealStoredValues bool
	// Conversion is the budget of the conversion probe in a review (the
	// key webhook.conversion): a review answers within the apiserver's
	// timeout for the webhook, so it sends at most MaxObjects stored
	// objects through the new conversion webhook, for at most Timeout.
	// A probe the budget cuts short says so, with both.
	Conversion ConversionBudget
}

// ConversionBudget bounds the conversion probe of one admission review.
type ConversionBudget struct {
	// MaxObjects: stored objects probed at most (the first the LIST
	// returns); default DefaultConversionMaxObjects.
	MaxObjects int
	// Timeout: the probe's time at most; default DefaultConversionTimeout.
	Timeout time.Duration
}

// The webhook's default conversion budget: a few hundred objects through a
// local webhook take well under a second (docs/benchmarks.md), and the
// apiserver's default timeout for a validating webhook is 10s.
const (
	DefaultConversionMaxObjects = 500
	DefaultConversionTimeout    = 3 * time.Second
)

// Checks is the `checks` key, in the structure of crd-diff's configuration.
type Checks struct {
	CRD           CRDChecks
	SameVersion   VersionChecks
	ServedVersion ServedVersionChecks
}

// Toggle is a check that can only be switched on or off.
type Toggle struct {
	Enabled bool
}

// CRDChecks are the checks run once per CRD (checks.crd).
type CRDChecks struct {
	Scope                Toggle
	StoredVersionRemoval Toggle
	ServedVersionRemoval ServedVersionRemovalCheck
	ExistingFieldRemoval Toggle
	// Subresources: the status or scale subresource of a version removed,
	// or its scale paths changed.
	Subresources Toggle
	// SelectableFields: a selectable field of a version removed.
	SelectableFields Toggle
	// StoragePruning: under conversion None, a served version whose fields
	// the storage version does not keep, or the other way round.
	StoragePruning StoragePruningCheck
	// Live-cluster checks, run only where a cluster is at hand.
	ExistingResources Toggle
	// ManagedFields: stored objects whose metadata.managedFields name a
	// version the update removes (or stops serving).
	ManagedFields ManagedFieldsCheck
	// OwnerReferences: objects of any kind whose ownerReferences name a
	// version the update removes (garbage collection stops).
	OwnerReferences Toggle
	// VersionLifecycle: a served version stops being served, or is
	// removed, without the old CRD marking it deprecated first.
	VersionLifecycle VersionLifecycleCheck
	CRDDeletion      Toggle
	// ConversionOrdering: in a kapp deploy, a CRD update whose conversion
	// webhook needs the new code of a workload the same change set rolls
	// out, without kapp's change rules making the CRD wait for it.
	ConversionOrdering Toggle
	// ConversionWebhook: the stored objects sent through the conversion
	// webhook the new CRD names, as the apiserver will (the conversion
	// probe): refusals, fields lost on a round trip, stash annotations
	// near the size limit. A live check (and the tools command's
	// --conversion-webhook-url).
	ConversionWebhook ConversionWebhookCheck
	// ApiserverRejects: the apiserver would refuse the new CRD. Its
	// findings are errors in every mode and cannot be exempted.
	ApiserverRejects Toggle
}

// VersionChecks configures the property checks run over a pair of schemas:
// the same version in the old and new CRD (sameVersion) or two served
// versions of the new CRD (servedVersion).
type VersionChecks struct {
	Enabled bool
	// UnhandledFailureMode overrides the top-level failMode for this pair
	// kind, for FailUnhandledChange only (FailDecisionFor); empty means
	// inherit.
	UnhandledFailureMode FailMode

	Enum     EnumCheck
	Default  DefaultCheck
	Required RequiredCheck
	Type     TypeCheck

	Maximum       MaxCheck
	MaxLength     MaxCheck
	MaxItems      MaxCheck
	MaxProperties MaxCheck
	Minimum       MinCheck
	MinLength     MinCheck
	MinItems      MinCheck
	MinProperties MinCheck

	ListType ListTypeCheck
	MapType  MapTypeCheck

	// Toggles holds the on/off switch of every other property check, keyed
	// by check ID (pattern, format, nullable, ...). A missing key is enabled.
	Toggles map[string]bool
}

// ServedVersionChecks configures the servedVersion pair checks.
type ServedVersionChecks struct {
	VersionChecks
	// IgnoreConversion: when true (default) the check is skipped for a CRD
	// with a webhook conversion; false runs it anyway.
	IgnoreConversion bool
}

// ServedVersionRemovalCheck configures checks.crd.servedVersionRemoval: a
// served version removed without first being unserved is always reported
// (when enabled); a version that stays but goes served: true -> false is
// reported under UnservedEnforcement.
type ServedVersionRemovalCheck struct {
	Enabled             bool
	UnservedEnforcement Enforcement // Strict | Warn (default) | None
}

// VersionLifecycleCheck configures checks.crd.versionLifecycle: Kubernetes'
// API deprecation policy and OLM's lifecycle want a version deprecated
// (deprecated: true, with a deprecationWarning its clients see) in a release
// before it stops being served. A version the old CRD serves without
// deprecated: true that the new CRD no longer serves, or removes, is
// reported under NotDeprecatedEnforcement. A version the old CRD no longer
// served is not judged: it was retired in an earlier release.
type VersionLifecycleCheck struct {
	Enabled                  bool
	NotDeprecatedEnforcement Enforcement // Strict | Warn (default) | None
}

// StoragePruningCheck configures checks.crd.storagePruning. Under
// conversion None an object written through a served version is pruned by
// that version's schema and by the storage version's: a property a served
// version declares and the storage version does not is lost on every write
// through it (always reported, when enabled); a property the storage
// version declares and a served version does not is missing from that
// version's view, and lost when a client reads, modifies and writes the
// object through it: reported under ReadModifyWriteEnforcement.
type StoragePruningCheck struct {
	Enabled                    bool
	ReadModifyWriteEnforcement Enforcement // Strict | Warn (default) | None
}

// ManagedFieldsCheck configures checks.crd.managedFields, a live check.
// Server-side apply converts an object to the version of each of its
// managedFields entries: once that version is gone from the CRD, every
// server-side apply of the object fails ("request to convert CR to an
// invalid group/version") until its managedFields are migrated. A version
// removed while entries name it is always reported (when enabled); a
// version that stays but is no longer served (server-side apply still
// works: the version exists) under UnservedEnforcement.
type ManagedFieldsCheck struct {
	Enabled             bool
	UnservedEnforcement Enforcement // Strict | Warn (default) | None
}

// ConversionWebhookCheck configures checks.crd.conversionWebhook. Objects
// the new conversion refuses or answers wrongly (unreadable: every read
// of them fails) and fields a round trip loses are always reported (when
// enabled); annotations of stored or converted objects near the 256 KiB
// limit (stash annotations that grow with each conversion) under
// AnnotationEnforcement.
type ConversionWebhookCheck struct {
	Enabled               bool
	AnnotationEnforcement Enforcement // Strict | Warn (default) | None
}

// ListTypeCheck configures the listType check. A change that adds
// uniqueness to stored lists (none/atomic -> set or map, set -> map, map
// keys changed) may invalidate stored objects; a change that only coarsens
// server-side apply ownership (set or map -> atomic, map -> set)
// invalidates none.
type ListTypeCheck struct {
	Enabled               bool
	UniquenessEnforcement Enforcement // Strict (default) | Warn | None
	CoarseningEnforcement Enforcement // Strict | Warn (default) | None
}

// MapTypeCheck configures the mapType check: a change of
// x-kubernetes-map-type only changes server-side apply ownership.
type MapTypeCheck struct {
	Enabled           bool
	ChangeEnforcement Enforcement // Strict | Warn (default) | None
}

type EnumCheck struct {
	Enabled             bool
	AdditionEnforcement Enforcement // Strict | IfPreviouslyConstrained | None
	RemovalEnforcement  Enforcement // Strict | None
}

type DefaultCheck struct {
	Enabled             bool
	ChangeEnforcement   Enforcement
	RemovalEnforcement  Enforcement
	AdditionEnforcement Enforcement
}

type MaxCheck struct {
	Enabled             bool
	AdditionEnforcement Enforcement
	DecreaseEnforcement Enforcement
}

type MinCheck struct {
	Enabled             bool
	AdditionEnforcement Enforcement
	IncreaseEnforcement Enforcement
}

type RequiredCheck struct {
	Enabled        bool
	NewEnforcement Enforcement
}

type TypeCheck struct {
	Enabled           bool
	ChangeEnforcement Enforcement
}

// DefaultLiveChecksTimeout is the default of liveChecksTimeout: long enough
// to page through hundreds of thousands of custom resources, short enough
// that a hung apiserver connection does not hold a deploy or a CI job.
const DefaultLiveChecksTimeout = 5 * time.Minute

// Default returns the default policy (docs/checks.md): every check on, mode
// error, failMode closed; changes that invalidate no stored object
// (server-side apply granularity, a version unserved, a version retired
// without being deprecated first) are warnings.
func Default() Settings {
	on := Toggle{Enabled: true}
	return Settings{
		Mode:                    ModeError,
		FailMode:                FailModeClosed,
		MaxFindingsPerCRD:       50,
		LiveChecksTimeout:       DefaultLiveChecksTimeout,
		UnaffectedEnforcement:   EnforcementStrict,
		AlphaVersionEnforcement: EnforcementStrict,
		Webhook: WebhookSettings{Conversion: ConversionBudget{
			MaxObjects: DefaultConversionMaxObjects, Timeout: DefaultConversionTimeout}},
		Checks: Checks{
			CRD: CRDChecks{
				Scope: on, StoredVersionRemoval: on,
				ServedVersionRemoval: ServedVersionRemovalCheck{Enabled: true, UnservedEnforcement: EnforcementWarn},
				ExistingFieldRemoval: on, Subresources: on, SelectableFields: on,
				ExistingResources: on, CRDDeletion: on,
				ManagedFields:    ManagedFieldsCheck{Enabled: true, UnservedEnforcement: EnforcementWarn},
				OwnerReferences:  on,
				VersionLifecycle: VersionLifecycleCheck{Enabled: true, NotDeprecatedEnforcement: EnforcementWarn},
				ApiserverRejects: on, ConversionOrdering: on,
				ConversionWebhook: ConversionWebhookCheck{Enabled: true, AnnotationEnforcement: EnforcementWarn},
				StoragePruning:    StoragePruningCheck{Enabled: true, ReadModifyWriteEnforcement: EnforcementWarn},
			},
			SameVersion:   defaultVersionChecks(),
			ServedVersion: ServedVersionChecks{VersionChecks: defaultVersionChecks(), IgnoreConversion: true},
		},
	}
}

func defaultVersionChecks() VersionChecks {
	maxC := MaxCheck{Enabled: true, AdditionEnforcement: EnforcementStrict, DecreaseEnforcement: EnforcementStrict}
	minC := MinCheck{Enabled: true, AdditionEnforcement: EnforcementStrict, IncreaseEnforcement: EnforcementStrict}
	return VersionChecks{
		Enabled: true,
		Enum: EnumCheck{Enabled: true,
			AdditionEnforcement: EnforcementIfPreviouslyConstrained, RemovalEnforcement: EnforcementStrict},
		Default: DefaultCheck{Enabled: true, ChangeEnforcement: EnforcementStrict,
			RemovalEnforcement: EnforcementStrict, AdditionEnforcement: EnforcementStrict},
		Required: RequiredCheck{Enabled: true, NewEnforcement: EnforcementStrict},
		Type:     TypeCheck{Enabled: true, ChangeEnforcement: EnforcementStrict},
		Maximum:  maxC, MaxLength: maxC, MaxItems: maxC, MaxProperties: maxC,
		Minimum: minC, MinLength: minC, MinItems: minC, MinProperties: minC,
		ListType: ListTypeCheck{Enabled: true,
			UniquenessEnforcement: EnforcementStrict, CoarseningEnforcement: EnforcementWarn},
		MapType: MapTypeCheck{Enabled: true, ChangeEnforcement: EnforcementWarn},
		Toggles: map[string]bool{},
	}
}

// ToggleEnabled reports whether a property check that has no options of its
// own (pattern, format, ...) is enabled.
func (v VersionChecks) ToggleEnabled(id string) bool {
	on, ok := v.Toggles[id]
	return !ok || on
}
