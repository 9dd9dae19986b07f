package evaluation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MigrationsLister is the part of a Cluster the evidence of the cluster's
// storage version migrator needs: its StorageVersionMigrations
// (kube.Client.ListStorageVersionMigrations). A Cluster without it offers
// no such evidence.
type MigrationsLister interface {
	ListStorageVersionMigrations(ctx context.Context) ([]unstructured.Unstructured, error)
}

var _ MigrationsLister = &kube.Client{}

// StoredVersionsVerdict is the judgement of a write of a CRD's status.
type StoredVersionsVerdict struct {
	// Removed are the versions the write drops from status.storedVersions.
	Removed []string
	// Evidence says what backs the drop ("" when nothing does, or nothing
	// is dropped).
	Evidence string
	// Findings: one storedVersionRemoval finding per dropped version when
	// no evidence backs the drop (crdupgradesafety.CompareStatus).
	Findings []crdupgradesafety.Finding
}

// JudgeStoredVersions judges a write of the status of a CRD (old: the
// stored CRD, new: as it would be stored; the webhook's review of
// customresourcedefinitions/status): versions may leave
// status.storedVersions only on evidence that no object is stored in them
// (pkg/kapp/internal/storedversions): the record of the migrate command
// at the CRD's storage version and generation, or a StorageVersionMigration
// of the CRD's resource that succeeded after the cluster's migrator marked
// the CRD StorageMigrating at its generation (read through cluster when it
// is a MigrationsLister). An error means the evidence could not be read.
func JudgeStoredVersions(ctx context.Context, cluster Cluster, old, new *apiextv1.CustomResourceDefinition,
	cfg *config.Settings) (StoredVersionsVerdict, error) {
	v := StoredVersionsVerdict{Removed: storedversions.Removed(old.Status.StoredVersions, new.Status.StoredVersions)}
	if len(v.Removed) == 0 {
		return v, nil
	}
	if storedversions.RecordBacksTrim(old, new.Status.StoredVersions) {
		r, _ := storedversions.RecordOf(old.Annotations)
		v.Evidence = fmt.Sprintf("the migrate command's record: every object rewritten at %s at generation %d", r.Version, r.Generation)
		return v, nil
	}
	storage := storedversions.StorageVersion(old)
	since, started := storedversions.MigratorStarted(old)
	if lister, ok := cluster.(MigrationsLister); ok && started && slices.Equal(new.Status.StoredVersions, []string{storage}) {
		svms, err := lister.ListStorageVersionMigrations(ctx)
		if err != nil && !errors.Is(err, ErrNotSupported) { // not supported: no such evidence
			return v, fmt.Errorf("crd %s: reading StorageVersionMigrations for evidence of the trim of status.storedVersions: %w", old.Name, err)
		}
		if name := storedversions.MigrationSucceededSince(svms, old.Spec.Group, old.Spec.Names.Plural, since); name != "" {
			v.Evidence = fmt.Sprintf("StorageVersionMigration %s succeeded at storage version %s", name, storage)
			return v, nil
		}
	}
	v.Findings = crdupgradesafety.CompareStatus(old, new, cfg)
	return v, nil
}
