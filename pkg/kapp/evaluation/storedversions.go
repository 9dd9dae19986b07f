package evaluation

import (
	"context"
	"errors"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
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
	// no evidence backs the drop (checks.CompareStatus).
	Findings []finding.Finding
}

// JudgeStoredVersions judges a write of the status of a CRD (old: the
// stored CRD, new: as it would be stored; the webhook's review of
// customresourcedefinitions/status): versions may leave
// status.storedVersions only on current evidence that no object is stored
// in them (storedversions.TrimEvidence): the record of the migrate command
// at the CRD's storage version and generation, or the
// StorageVersionMigration the cluster's migrator named in the CRD's
// StorageMigrating condition at its generation, succeeded (read through
// cluster's MigrationsLister; ErrNotSupported: no such evidence). An error means the evidence
// could not be read.
func JudgeStoredVersions(ctx context.Context, cluster Cluster, old, new *apiextv1.CustomResourceDefinition,
	cfg *config.Settings) (StoredVersionsVerdict, error) {
	v := StoredVersionsVerdict{Removed: storedversions.Removed(old.Status.StoredVersions, new.Status.StoredVersions)}
	if len(v.Removed) == 0 {
		return v, nil
	}
	var list storedversions.MigrationsFunc
	if cluster != nil { // every Cluster has the capability (ErrNotSupported where missing)
		list = cluster.ListStorageVersionMigrations
	}
	ev, ok, err := storedversions.TrimEvidence(ctx, old, new.Status.StoredVersions, list)
	if err != nil && !errors.Is(err, ErrNotSupported) { // not supported: no such evidence
		return v, fmt.Errorf("crd %s: reading StorageVersionMigrations for evidence of the trim of status.storedVersions: %w", old.Name, err)
	}
	switch {
	case ok && ev.Kind == storedversions.EvidenceRecord:
		v.Evidence = fmt.Sprintf("the migrate command's record: every object rewritten at %s at generation %d", ev.Record.Version, ev.Record.Generation)
		return v, nil
	case ok:
		v.Evidence = fmt.Sprintf("StorageVersionMigration %s succeeded at storage version %s", ev.Migration, ev.Version)
		return v, nil
	}
	v.Findings = checks.CompareStatus(old, new, cfg)
	return v, nil
}
