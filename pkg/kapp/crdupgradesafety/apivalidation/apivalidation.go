package apivalidation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The descriptor of apiserverRejects: the apiserver refuses the new CRD (library validation offline, a server-side dry run in a deploy).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckAPIServerRejects}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyApiserverReason})

// The apiserverRejects check: the apiserver's own validation of a CRD
// create or update, run offline with the apiextensions-apiserver library.
// A CRD the apiserver refuses would make a deploy fail half way, after the
// changes ordered before it were applied.

// scheme decodes CRDs the way the apiserver does: v1 defaulting functions,
// then conversion to the internal type the validation is written for.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// ValidateCRD runs the apiserver's validation of a CRD create (old nil) or
// of the update of old to new, and returns what it would refuse (nil when
// it accepts).
//
// Both CRDs go through the apiserver's steps before validation: defaulting
// with the v1 scheme's defaulters (which also records the storage version as
// stored when the status names none) and conversion to the internal type;
// then the registry's preparation (on create: status cleared, the storage
// version stored; on update: the old status kept, the new storage version
// added to status.storedVersions, generation and system metadata carried
// over); then validation.ValidateCustomResourceDefinition or
// ValidateCustomResourceDefinitionUpdate: names, versions, structural
// schemas, defaults, CEL compilation and cost budget, list and map types,
// stored versions, and on update the immutable fields and the ratcheting of
// rules the old CRD already broke.
//
// An old CRD without status (read from a file) stands for the CRD as the
// cluster holds it after it was created: established, its storage version
// stored.
func ValidateCRD(ctx context.Context, old, new *apiextv1.CustomResourceDefinition) field.ErrorList {
	if old == nil {
		return PrepareCRD(new).Create(ctx)
	}
	return PrepareCRD(new).Update(ctx, PrepareCRD(old))
}

// PreparedCRD is a CRD defaulted and converted for the apiserver's
// validation once, for any number of validations (see ValidateCRD): a
// large CRD validated on its own and as the old side of an update is
// converted once. Validations only read it; they may run concurrently.
type PreparedCRD struct {
	internal *apiextensions.CustomResourceDefinition
	err      error
}

// PrepareCRD defaults and converts crd, leaving it as it is.
func PrepareCRD(crd *apiextv1.CustomResourceDefinition) *PreparedCRD {
	internal, err := toInternal(crd)
	return &PreparedCRD{internal: internal, err: err}
}

// Create validates the create of the CRD.
func (p *PreparedCRD) Create(ctx context.Context) field.ErrorList {
	if p.err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("decoding the new CRD: %w", p.err))}
	}
	crd := *p.internal // the preparation sets top-level fields only
	prepareForCreate(&crd)
	return validation.ValidateCustomResourceDefinition(ctx, &crd)
}

// Update validates the update of old to the CRD.
func (p *PreparedCRD) Update(ctx context.Context, old *PreparedCRD) field.ErrorList {
	if p.err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("decoding the new CRD: %w", p.err))}
	}
	if old.err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("decoding the old CRD: %w", old.err))}
	}
	newCRD, oldCRD := *p.internal, *old.internal
	if len(oldCRD.Status.Conditions) == 0 {
		oldCRD.Status.Conditions = []apiextensions.CustomResourceDefinitionCondition{
			{Type: apiextensions.Established, Status: apiextensions.ConditionTrue},
		}
	}
	prepareForUpdate(&newCRD, &oldCRD)
	return validation.ValidateCustomResourceDefinitionUpdate(ctx, &newCRD, &oldCRD)
}

// crdStrategy is the apiserver's registry strategy for CRDs: its warnings
// are what the apiserver returns with an accepted create or update.
var crdStrategy = customresourcedefinition.NewStrategy(scheme)

// WarningsOnCreate returns the warnings the apiserver gives with the
// create of the CRD (unrecognized formats, list sets of objects or
// lists); nil when it cannot be decoded.
func (p *PreparedCRD) WarningsOnCreate(ctx context.Context) []string {
	if p.err != nil {
		return nil
	}
	crd := *p.internal
	prepareForCreate(&crd)
	return crdStrategy.WarningsOnCreate(ctx, &crd)
}

// WarningsOnUpdate returns the warnings the apiserver gives with the
// update of old to the CRD: those the old CRD did not already draw.
func (p *PreparedCRD) WarningsOnUpdate(ctx context.Context, old *PreparedCRD) []string {
	if p.err != nil || old.err != nil {
		return nil
	}
	newCRD, oldCRD := *p.internal, *old.internal
	prepareForUpdate(&newCRD, &oldCRD)
	return crdStrategy.WarningsOnUpdate(ctx, &newCRD, &oldCRD)
}

// toInternal defaults a copy of crd and converts it to the internal type,
// leaving crd as it is. The v1 defaulters set names, the conversion (and
// its webhook's port) and the stored versions: only those are copied, not
// the schemas (a deep copy cost as much as the validation of a large CRD).
func toInternal(crd *apiextv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	v1 := *crd
	v1.Spec.Conversion = crd.Spec.Conversion.DeepCopy()
	crd.Status.DeepCopyInto(&v1.Status)
	scheme.Default(&v1)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(&v1, internal, nil); err != nil {
		return nil, err
	}
	return internal, nil
}

// prepareForCreate is what the CRD registry does to a created CRD before
// validating it (the registry's PrepareForCreate; its feature-gated field
// drops are no-ops with the gates' defaults).
func prepareForCreate(crd *apiextensions.CustomResourceDefinition) {
	crd.Status = apiextensions.CustomResourceDefinitionStatus{} // a new status: the prepared CRD keeps its own
	crd.Generation = 1
	addStorageVersion(crd)
}

// prepareForUpdate is what the apiserver does to an updated CRD before
// validating it: rest.BeforeUpdate's carried-over system metadata and the
// registry's PrepareForUpdate. The registry bumps the generation when the
// spec changed; the validation only requires it to be >= 0, so the costly
// comparison of the specs is left out and the old generation kept.
func prepareForUpdate(crd, old *apiextensions.CustomResourceDefinition) {
	crd.Generation = old.Generation
	crd.Status = *old.Status.DeepCopy()
	addStorageVersion(crd)
	if crd.ResourceVersion == "" {
		// kapp sends the new CRD with the live resourceVersion (its rebase
		// rules copy the live metadata); offline any version stands for it.
		crd.ResourceVersion = old.ResourceVersion
		if crd.ResourceVersion == "" {
			crd.ResourceVersion = "1"
		}
	}
	if crd.UID == "" {
		crd.UID = old.UID
	}
	if !old.CreationTimestamp.IsZero() {
		crd.CreationTimestamp = old.CreationTimestamp
	}
	if old.DeletionTimestamp != nil {
		crd.DeletionTimestamp = old.DeletionTimestamp
	}
	if old.DeletionGracePeriodSeconds != nil && crd.DeletionGracePeriodSeconds == nil {
		crd.DeletionGracePeriodSeconds = old.DeletionGracePeriodSeconds
	}
}

func addStorageVersion(crd *apiextensions.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if !apiextensions.IsStoredVersion(crd, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
			return
		}
	}
}

// Rejection is one reason the apiserver refuses a request: the field path
// it names ("" when none) and its message.
type Rejection struct {
	Field   string
	Message string
}

// Rejections turns validation errors into rejections.
func Rejections(errs field.ErrorList) []Rejection {
	rs := make([]Rejection, len(errs))
	for i, e := range errs {
		rs[i] = Rejection{Field: e.Field, Message: e.ErrorBody()}
	}
	return rs
}

// internalFields are the fields the internal CRD type holds once for all
// versions when every version has the same value: the apiserver's messages
// name them by their internal path.
var internalFields = []struct{ internal, v1 string }{
	{"spec.validation", "spec.versions[*].schema"},
	{"spec.subresources", "spec.versions[*].subresources"},
	{"spec.additionalPrinterColumns", "spec.versions[*].additionalPrinterColumns"},
	{"spec.selectableFields", "spec.versions[*].selectableFields"},
}

// V1FieldPath names a field path of an apiserver message as it is written
// in a v1 CRD: the apiserver validates the internal type, which holds a
// schema (subresources, printer columns, selectable fields) shared by every
// version once under spec.validation (spec.subresources, ...).
func V1FieldPath(path string) string {
	for _, f := range internalFields {
		if rest, ok := strings.CutPrefix(path, f.internal); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return f.v1 + rest
		}
	}
	return path
}

// Rejected returns one apiserverRejects finding per rejection of a request
// (verb: "create", "update", "delete", with how it was learnt) about the
// named CRD; nil when the check is disabled. These findings are errors in
// every mode and cannot be exempted: the apiserver refuses the change
// whatever the configuration says, and going on would apply the rest of the
// change set and then fail half way.
func Rejected(crdName, verb string, rs []Rejection, cfg *config.Settings) []finding.Finding {
	if len(rs) == 0 || !finding.SettingsOf(cfg).Checks.CRD.ApiserverRejects.Enabled {
		return nil
	}
	findings := make([]finding.Finding, len(rs))
	for i, r := range rs {
		findings[i] = finding.Finding{
			CRD: crdName, CRDField: V1FieldPath(r.Field), Check: config.CheckAPIServerRejects, Severity: finding.SeverityError,
			Change:     finding.Change{Kind: "rejected", New: finding.BoundText(r.Message, finding.MaxMessageBytes)},
			ChangeText: finding.BoundText(fmt.Sprintf("the apiserver refuses the %s: %s", verb, r.Message), finding.MaxMessageBytes),
			Remedy:     &finding.Remedy{Action: finding.RemedyApiserverReason, Detail: finding.BoundText(r.Message, finding.MaxMessageBytes)},
		}
	}
	finding.KeyFindings(findings)
	finding.SortFindings(findings)
	return findings
}

// DeniedByWebhook returns the apiserverRejects finding of a request (verb
// as for Rejected) about the named CRD that the CRDUpgradeSafety admission
// webhook denies for findings this run does not report as errors itself
// (denied: a webhook with other settings may find more, or judge as an
// error what is a warning here, finding.DeniedFinding.Here); nil when
// there are none (the run's own findings say what the webhook says, once)
// or the check is disabled. Like Rejected's, it is an error in every mode
// and cannot be exempted. The denied findings are its facts (Denied),
// which the outputs word; its fingerprint hashes theirs.
func DeniedByWebhook(crdName, verb string, denied []finding.DeniedFinding, cfg *config.Settings) []finding.Finding {
	if len(denied) == 0 || !finding.SettingsOf(cfg).Checks.CRD.ApiserverRejects.Enabled {
		return nil
	}
	fps := make([]string, len(denied))
	for i, d := range denied {
		fps[i] = d.Fingerprint
	}
	n := len(denied)
	fs := []finding.Finding{{
		CRD: crdName, Check: config.CheckAPIServerRejects, Severity: finding.SeverityError,
		Change: finding.Change{Kind: "deniedByWebhook", New: finding.FactSet(fps)},
		ChangeText: fmt.Sprintf("the %s admission webhook denies the %s for %d %s this check does not report as %s",
			config.CheckName, verb, n, plural.Of(n, "finding", "findings"), plural.Of(n, "an error", "errors")),
		Denied: slices.Clone(denied),
		Remedy: &finding.Remedy{Action: finding.RemedyApiserverReason,
			Detail: "the webhook's findings above (its settings judge more strictly than this check's: compare the two)"},
	}}
	finding.KeyFindings(fs)
	return fs
}

// Warned returns one apiserverRejects warning per warning the apiserver
// gives with an accepted request (verb as for Rejected) about the named
// CRD; nil when the check is disabled. The apiserver applies the change;
// the warning names what will not work as its author may expect.
func Warned(crdName, verb string, warnings []string, cfg *config.Settings) []finding.Finding {
	if len(warnings) == 0 || !finding.SettingsOf(cfg).Checks.CRD.ApiserverRejects.Enabled {
		return nil
	}
	findings := make([]finding.Finding, len(warnings))
	for i, w := range warnings {
		findings[i] = finding.Finding{
			CRD: crdName, Check: config.CheckAPIServerRejects, Severity: finding.SeverityWarning,
			Change:     finding.Change{Kind: "warned", New: finding.BoundText(w, finding.MaxMessageBytes)},
			ChangeText: finding.BoundText(fmt.Sprintf("the apiserver warns on the %s: %s", verb, w), finding.MaxMessageBytes),
			Remedy:     &finding.Remedy{Action: finding.RemedyApiserverReason, Detail: finding.BoundText(w, finding.MaxMessageBytes)},
		}
	}
	finding.KeyFindings(findings)
	finding.SortFindings(findings)
	return findings
}

// InvalidOld returns an apiserverRejects warning for an old CRD (read from
// a file) that the apiserver would itself refuse to create: the comparison
// still runs, but its old side may not be what a cluster holds. nil when
// errs is empty or the check is disabled.
func InvalidOld(crdName string, errs field.ErrorList, cfg *config.Settings) []finding.Finding {
	if len(errs) == 0 || !finding.SettingsOf(cfg).Checks.CRD.ApiserverRejects.Enabled {
		return nil
	}
	fs := []finding.Finding{{
		CRD: crdName, Check: config.CheckAPIServerRejects, Severity: finding.SeverityWarning,
		Change:     finding.Change{Kind: "oldInvalid", New: finding.BoundText(finding.Summarize(v1Paths(errs)), finding.MaxMessageBytes)},
		ChangeText: finding.BoundText("the old CRD is itself invalid, the apiserver would refuse to create it: "+finding.Summarize(v1Paths(errs)), finding.MaxMessageBytes),
		Remedy:     &finding.Remedy{Action: finding.RemedyApiserverReason, Detail: finding.BoundText(finding.Summarize(v1Paths(errs)), finding.MaxMessageBytes)},
	}}
	finding.KeyFindings(fs)
	return fs
}

func v1Paths(errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		c.Field = V1FieldPath(c.Field)
		out[i] = &c
	}
	return out
}
