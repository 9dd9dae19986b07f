package finding

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"k8s.io/apimachinery/pkg/version"
)

// IsAlphaVersion tells whether a CRD version's name says alpha by the
// apiserver's own version naming (v1alpha1, v2alpha3): the names the
// apiserver orders below every beta and GA version. A name that is not
// Kubernetes-like (v1alpha, alpha1, v1-alpha1) is not alpha.
//
// It asks apimachinery's version priority, the order the apiserver serves
// versions in, rather than a pattern of its own: a Kubernetes-like alpha
// name sorts at or above v0alpha0 (names that are not Kubernetes-like sort
// below every one that is) and below v0beta0 (the lowest beta).
func IsAlphaVersion(name string) bool {
	return version.CompareKubeAwareVersionStrings(name, "v0alpha0") >= 0 &&
		version.CompareKubeAwareVersionStrings(name, "v0beta0") < 0
}

// alphaLenient tells whether alphaVersionEnforcement Warn makes an error
// of change c a warning: c is about an alpha version (a servedVersion pair:
// both are alpha), and about the schema, not about data or objects that
// exist. Never lenient: CRD-level findings (no version), apiserverRejects
// (refused whatever the config says), storedVersionRemoval (the objects
// stored in the version), storagePruning (data of the storage version,
// which every version shares), and the live checks about objects that exist
// (existingResources, crdDeletion, managedFields, ownerReferences). A
// lenient finding whose read of the stored objects finds data pruned is an
// error again (ApplyImpacts).
func alphaLenient(cfg *config.Settings, c Draft) bool {
	if cfg.AlphaVersionEnforcement != config.EnforcementWarn || c.Version == "" {
		return false
	}
	switch c.Check {
	case config.CheckAPIServerRejects, config.CheckStoredVersionRemoval, config.CheckStoragePruning,
		config.CheckExistingResources, config.CheckCRDDeletion, config.CheckManagedFields, config.CheckOwnerReferences:
		return false
	}
	return IsAlphaVersion(c.Version) && (c.PairVersion == "" || IsAlphaVersion(c.PairVersion))
}
