package migration

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	versioninfo "k8s.io/apimachinery/pkg/version"
)

// The cluster's storage version migrator of Kubernetes 1.37.0 to 1.37.2
// trims status.storedVersions after a migration that FAILED as after one
// that succeeded (kubernetes/kubernetes#143103: the controller's
// finishCRDMigration sets status.storedVersions to the storage version
// whenever the CRD's generation did not change, without checking success;
// fixed in 1.38). A migration fails when one object cannot be written (an
// admission policy or webhook, a validation rule): its objects at the old
// version stay there, and the version leaves status.storedVersions all the
// same, so the apiserver then lets it be removed from the CRD and every
// LIST of the resource fails. The command moves managedFields first and
// creates no migration while an object cannot be written, but an object
// created or made unwritable after that step still fails the migration.
//
// So on those versions the command never creates a StorageVersionMigration:
// --method auto rewrites the objects itself (which trims only once every
// object is written), and --method migrator is refused before anything is
// written. The version is read through discovery (GET /version); one that
// cannot be parsed counts as affected.
//
// Where the migrator is used, a second guard repairs a trim after a failed
// migration all the same (undoTrimAfterFailure): a build may report a
// fixed version without the fix.

// ErrMigratorTrimsOnFailure: --method migrator on a Kubernetes version
// whose migrator trims status.storedVersions after a failed migration.
var ErrMigratorTrimsOnFailure = errors.New("storage version migrator refused")

// upstreamIssueTrimOnFailure is the upstream issue of that bug.
const upstreamIssueTrimOnFailure = "kubernetes/kubernetes#143103"

// migratorTrim is the verdict on a cluster's storage version migrator.
type migratorTrim struct {
	// TrimsOnFailure: it trims status.storedVersions after a failed
	// migration (or its version could not be read).
	TrimsOnFailure bool
	// Version is the apiserver's gitVersion as reported.
	Version string
	// Unparsed: Version could not be parsed.
	Unparsed bool
}

// migratorTrimOf judges the migrator of the apiserver of info: affected
// are 1.37.0 to 1.37.2, whatever a vendor appends (v1.37.2-eks-1a2b3c,
// v1.37.2+k3s1), and any version that cannot be parsed.
func migratorTrimOf(info *versioninfo.Info) migratorTrim {
	if info == nil {
		return migratorTrim{TrimsOnFailure: true, Unparsed: true}
	}
	t := migratorTrim{Version: info.GitVersion}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		t.TrimsOnFailure, t.Unparsed = true, true
		return t
	}
	t.TrimsOnFailure = v.Major() == 1 && v.Minor() == 37 && v.Patch() <= 2
	return t
}

// reason says why the migrator is not used, for the Method line or the
// error.
func (t migratorTrim) reason() string {
	if t.Unparsed {
		return fmt.Sprintf("the apiserver's version %q cannot be read, and the storage version migrator of Kubernetes 1.37.0 to 1.37.2 "+
			"trims status.storedVersions after a failed migration (%s)", t.Version, upstreamIssueTrimOnFailure)
	}
	return fmt.Sprintf("the storage version migrator of Kubernetes %s trims status.storedVersions after a failed migration, "+
		"leaving objects in a version no longer listed (%s, Kubernetes 1.37.0 to 1.37.2)", t.Version, upstreamIssueTrimOnFailure)
}
