package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The front's view of the apiserver's own validation of a CRD
// (apivalidation: apiserverRejects) and of the validators kept across
// pairs (objects.Validators): what the evaluation service needs of those
// rooms, so that it talks to the engine's front only (TestLayers).

// PreparedCRD is a CRD prepared for the apiserver's validation
// (apivalidation.PreparedCRD).
type PreparedCRD = apivalidation.PreparedCRD

// Rejection is one reason the apiserver refuses a request
// (apivalidation.Rejection).
type Rejection = apivalidation.Rejection

// PrepareCRD is apivalidation.PrepareCRD.
func PrepareCRD(crd *apiextv1.CustomResourceDefinition) *PreparedCRD {
	return apivalidation.PrepareCRD(crd)
}

// Rejections is apivalidation.Rejections.
func Rejections(errs field.ErrorList) []Rejection { return apivalidation.Rejections(errs) }

// V1FieldPath is apivalidation.V1FieldPath.
func V1FieldPath(path string) string { return apivalidation.V1FieldPath(path) }

// Rejected is apivalidation.Rejected: the apiserverRejects findings of a
// request the apiserver refuses.
func Rejected(crdName, verb string, rs []Rejection, cfg *config.Settings) []finding.Finding {
	return apivalidation.Rejected(crdName, verb, rs, cfg)
}

// Warned is apivalidation.Warned: the apiserver's warnings with an
// accepted request.
func Warned(crdName, verb string, warnings []string, cfg *config.Settings) []finding.Finding {
	return apivalidation.Warned(crdName, verb, warnings, cfg)
}

// InvalidOld is apivalidation.InvalidOld: an old CRD the apiserver would
// refuse to create.
func InvalidOld(crdName string, errs field.ErrorList, cfg *config.Settings) []finding.Finding {
	return apivalidation.InvalidOld(crdName, errs, cfg)
}

// DeniedByWebhook is apivalidation.DeniedByWebhook: a denial by the
// CRDUpgradeSafety admission webhook, said once.
func DeniedByWebhook(crdName, verb string, denied []finding.DeniedFinding, cfg *config.Settings) []finding.Finding {
	return apivalidation.DeniedByWebhook(crdName, verb, denied, cfg)
}

// Validators keeps the validators of stored objects' batches across pairs
// (objects.Validators; Pair.Validators).
type Validators = objects.Validators

// NewValidators is objects.NewValidators: at most max validators.
func NewValidators(max int) *Validators { return objects.NewValidators(max) }
