package migration

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Reasons a CRD cannot be migrated, found before anything is written.
var (
	// ErrCannotMigrate is wrapped by every error that stops a migration
	// before any write: a CRD that is missing, not ready, or whose
	// versions are not what the migration needs.
	ErrCannotMigrate = errors.New("cannot migrate stored versions")
	// ErrStorageVersionMismatch: the storage version is not --to.
	ErrStorageVersionMismatch = errors.New("unexpected storage version")
	// ErrStorageVersionNotServed: the storage version has served: false.
	ErrStorageVersionNotServed = errors.New("storage version not served")
)

// Plan is what migrating one CRD means, decided from the live CRD
// before anything is written.
type Plan struct {
	Name       string
	UID        types.UID
	Generation int64 // of the CRD the plan was made from: a spec change during the run stops the trim
	Group      string
	Kind       string
	Plural     string
	Storage    string   // the version every object is rewritten at
	Stored     []string // status.storedVersions before the migration
	Versions   []string // every version of the CRD, in the order of its spec
	Objects    int      // custom resources at planning time (all namespaces)
	// StaleManagedFields counts, when status.storedVersions is the storage
	// version alone already (Done), the objects whose managedFields name
	// another version: they still need the managedFields pass. Not counted
	// otherwise (the migration moves them anyway).
	StaleManagedFields int
	// Unproven: status.storedVersions was trimmed with no evidence that
	// every object was migrated (storedversions.UnprovenTrim: by hand):
	// the objects are migrated again, and the record written.
	Unproven *storedversions.Trim

	// ManagedFields decides which managedFields entries move to the
	// storage version and which are dropped (fieldsets.go).
	ManagedFields FieldSetPolicy
}

// DroppedVersions lists, sorted, the versions whose managedFields entries
// the migration drops instead of moving them to the storage version (a
// conversion webhook, and versions whose schemas declare other fields);
// none under conversion None.
func (p *Plan) DroppedVersions() []string {
	return p.ManagedFields.droppedVersions()
}

// Done reports whether status.storedVersions is already the storage
// version alone, on evidence: the apiserver then holds no object in any
// other version.
func (p *Plan) Done() bool {
	return p.trimmed() && p.Unproven == nil
}

// trimmed: status.storedVersions is the storage version alone.
func (p *Plan) trimmed() bool {
	return len(p.Stored) == 1 && p.Stored[0] == p.Storage
}

// Pending reports whether the migration has anything to do for the CRD:
// objects to rewrite and status.storedVersions to trim, or managedFields
// to move.
func (p *Plan) Pending() bool {
	return !p.Done() || p.StaleManagedFields > 0
}

func (p *Plan) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: p.Group, Version: p.Storage, Resource: p.Plural}
}

// planMigration checks that the live CRD u can be migrated to the version
// to (its storage version when to is empty) and returns the plan. Errors
// wrap ErrCannotMigrate and name the CRD, the version and why.
func planMigration(u *unstructured.Unstructured, to string) (*Plan, error) {
	crd := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decoding crd %s: %w", u.GetName(), err)
	}
	fail := func(reason error, format string, args ...any) error {
		return cannotMigrate(crd.Name, reason, format, args...)
	}

	if crd.DeletionTimestamp != nil {
		return nil, fail(errCRDNotReady, "it is being deleted")
	}
	if cond := crdCondition(crd, apiextv1.Established); cond == nil || cond.Status != apiextv1.ConditionTrue {
		why := "no Established condition"
		if cond != nil {
			why = fmt.Sprintf("condition Established is %s: %s", cond.Status, cond.Message)
		}
		return nil, fail(errCRDNotReady, "its API is not served yet (%s)", why)
	}

	var storage *apiextv1.CustomResourceDefinitionVersion
	names := make([]string, len(crd.Spec.Versions))
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		names[i] = v.Name
		if v.Storage {
			storage = v
		}
	}
	if storage == nil { // the apiserver does not accept such a CRD
		return nil, fail(errCRDNotReady, "no version is marked storage: true")
	}
	if to != "" && to != storage.Name {
		if !slices.Contains(names, to) {
			return nil, fail(ErrStorageVersionMismatch, "it has no version %s (--to); its versions: %s, storage version %s",
				to, strings.Join(names, ", "), storage.Name)
		}
		return nil, fail(ErrStorageVersionMismatch,
			"the storage version is %s, not %s (--to): deploy the CRD with storage: true on %s first, then migrate",
			storage.Name, to, to)
	}
	if running, msg := storageMigrating(u); running {
		return nil, fail(errMigrationRunning, "%s; wait for it to finish", msg)
	}
	if !storage.Served {
		return nil, fail(ErrStorageVersionNotServed,
			"storage version %s has served: false: objects are read and rewritten through the API at the storage version, so %s must be served during the migration",
			storage.Name, storage.Name)
	}

	return &Plan{
		Name:          crd.Name,
		UID:           crd.UID,
		Generation:    crd.Generation,
		Group:         crd.Spec.Group,
		Kind:          crd.Spec.Names.Kind,
		Plural:        crd.Spec.Names.Plural,
		Storage:       storage.Name,
		Stored:        crd.Status.StoredVersions,
		Versions:      names,
		Unproven:      storedversions.UnprovenTrim(crd),
		ManagedFields: fieldSetPolicyOf(crd, storage.Name),
	}, nil
}

var (
	errCRDNotReady = errors.New("crd not ready")
	errCRDNotFound = errors.New("crd not found")
	// errMigrationRunning: the cluster's storage version migrator is
	// migrating the CRD (its condition StorageMigrating is True).
	errMigrationRunning = errors.New("a storage version migration is running")
)

// storageMigrating reports whether the CRD's StorageMigrating condition is
// True (the cluster's migrator is at work) and its message ("Migration
// widgets-x7k2p is running").
func storageMigrating(u *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == string(apiextv1.StorageMigrating) && m["status"] == string(apiextv1.ConditionTrue) {
			msg, _ := m["message"].(string)
			if msg == "" {
				msg = "a storage version migration is running"
			}
			return true, msg
		}
	}
	return false, ""
}

// cannotMigrateError says why a CRD cannot be migrated; it wraps
// ErrCannotMigrate and the reason's sentinel.
type cannotMigrateError struct {
	crd    string
	reason error
	msg    string
}

func (e *cannotMigrateError) Error() string {
	return fmt.Sprintf("crd %s: %s: %s", e.crd, ErrCannotMigrate, e.msg)
}

func (e *cannotMigrateError) Unwrap() []error { return []error{ErrCannotMigrate, e.reason} }

func cannotMigrate(crd string, reason error, format string, args ...any) error {
	return &cannotMigrateError{crd: crd, reason: reason, msg: fmt.Sprintf(format, args...)}
}

func crdCondition(crd *apiextv1.CustomResourceDefinition, t apiextv1.CustomResourceDefinitionConditionType) *apiextv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// StoredVersionsChange renders the change of status.storedVersions, e.g.
// "[v1alpha1 v1] -> [v1]", or "[v1] (unchanged)".
func (p *Plan) StoredVersionsChange() string {
	before := "[" + strings.Join(p.Stored, " ") + "]"
	switch {
	case p.Done():
		return before + " (unchanged)"
	case p.trimmed():
		return before + " (trimmed by " + p.Unproven.Manager + " without evidence: objects migrated again)"
	}
	return before + " -> [" + p.Storage + "]"
}
