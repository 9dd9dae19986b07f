package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"
)

// The cluster's storage version migrator of Kubernetes 1.37.0 to 1.37.2
// trims status.storedVersions after a migration that failed
// (kubernetes/kubernetes#143103). These tests make a migration fail on an
// object the managedFields step of the migrator method does not write
// (its managedFields name no other version, as for an object created
// after that step) and that a ValidatingAdmissionPolicy freezes: on
// every version the version its objects are stored in stays in
// status.storedVersions and every object stays readable.

// migratorTrimsOnFailure reports whether the cluster's migrator trims
// status.storedVersions after a failed migration (1.37.0 to 1.37.2), and
// returns its gitVersion.
func migratorTrimsOnFailure(t *testing.T, e *env) (bool, string) {
	t.Helper()
	info, err := e.core.Discovery().ServerVersion()
	require.NoError(t, err)
	v, err := version.ParseGeneric(info.GitVersion)
	require.NoError(t, err)
	return v.Major() == 1 && v.Minor() == 37 && v.Patch() <= 2, info.GitVersion
}

// autoUsesMigrator reports whether `--method auto` hands the objects to
// the cluster's migrator: where storagemigration.k8s.io/v1 is served
// (1.37 and later), except on the versions whose migrator trims after a
// failure.
func autoUsesMigrator(t *testing.T, e *env) bool {
	t.Helper()
	trims, _ := migratorTrimsOnFailure(t, e)
	return kubeMinor(t, e) >= 37 && !trims
}

// resetManagedFields clears the managedFields of a custom resource (an
// update with the single empty entry the apiserver takes as a reset).
func (e *env) resetManagedFields(t *testing.T, n names, version, ns, name string) {
	t.Helper()
	ri := e.dyn.Resource(n.gvr(version)).Namespace(ns)
	obj, err := ri.Get(tctx(t), name, metav1.GetOptions{})
	require.NoError(t, err)
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{}})
	updated, err := ri.Update(tctx(t), obj, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Empty(t, updated.GetManagedFields())
}

// freezeObject installs a ValidatingAdmissionPolicy (and its binding) that
// denies every update of one custom resource of the test's CRD, at any
// version, and waits until the apiserver enforces it. It is removed by the
// returned function (and when the test ends).
func (e *env) freezeObject(t *testing.T, n names, ns, name string) (unfreeze func()) {
	t.Helper()
	policyName := "freeze-" + n.Singular + "-" + name
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": policyName},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{group}, "apiVersions": []any{"*"},
				"resources": []any{n.Plural}, "operations": []any{"UPDATE"},
				"resourceNames": []any{name},
			}}},
			"validations": []any{map[string]any{"expression": "false", "message": ns + "/" + name + " is frozen"}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": policyName},
		"spec":     map[string]any{"policyName": policyName, "validationActions": []any{"Deny"}},
	}}
	_, err := e.dyn.Resource(policyGVR).Create(tctx(t), policy, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.dyn.Resource(bindingGVR).Create(tctx(t), binding, metav1.CreateOptions{})
	require.NoError(t, err)
	done := false
	unfreeze = func() {
		if done {
			return
		}
		done = true
		_ = e.dyn.Resource(bindingGVR).Delete(tctx(t), policyName, metav1.DeleteOptions{})
		_ = e.dyn.Resource(policyGVR).Delete(tctx(t), policyName, metav1.DeleteOptions{})
		waitForDryRunUpdate(t, e.dyn.Resource(n.gvr("v1")).Namespace(ns), name, false)
	}
	t.Cleanup(unfreeze)
	waitForDryRunUpdate(t, e.dyn.Resource(n.gvr("v1")).Namespace(ns), name, true)
	return unfreeze
}

// TestMigrateStorageFailedMigrationKeepsStoredVersions (issue 37): a
// migration that fails on one object never lets v1alpha1 leave
// status.storedVersions, whatever the method auto picks. On 1.37.0 to
// 1.37.2 auto rewrites the objects itself instead of creating a
// StorageVersionMigration (whose failure the controller answers with the
// trim) and says why, and --method migrator is refused. Once the object is
// writable again, the next run completes the migration.
func TestMigrateStorageFailedMigrationKeepsStoredVersions(t *testing.T) {
	t.Parallel()
	e, n := migrateApp(t, func(e *env, n names) {
		e.createCRs(t, n, "migrate/crs.yaml")
		// red is stored at v1alpha1 with no managedFields: the managedFields
		// step has nothing to write for it, as for an object created after
		// that step; only the migration proper writes it.
		e.resetManagedFields(t, n, "v1alpha1", "default", "red")
	})
	unfreeze := e.freezeObject(t, n, "default", "red")
	trims, gitVersion := migratorTrimsOnFailure(t, e)

	r := e.migrate(t, "--crd", n.CRD, "-y")
	require.Equalf(t, 1, r.exitCode, "output:\n%s", r.out)
	require.Equal(t, []string{"v1alpha1", "v1"}, e.storedVersions(t, n), "v1alpha1, where red is stored, is still listed")
	for _, v := range []string{"v1alpha1", "v1"} {
		require.Lenf(t, e.objectVersions(t, n, v), 4, "every object is readable at %s", v)
	}
	require.NotContains(t, r.out, "status.storedVersions [v1alpha1 v1] -> [v1]")
	switch {
	case trims:
		require.Contains(t, r.out, "Method: rewrite (the cluster serves storagemigration.k8s.io/v1, but the storage version migrator of Kubernetes "+
			gitVersion+" trims status.storedVersions after a failed migration, leaving objects in a version no longer listed (kubernetes/kubernetes#143103")
		require.Contains(t, r.out, "rewriting default/red: ")
		require.Contains(t, r.out, "default/red is frozen")
	case kubeMinor(t, e) >= 37:
		require.Contains(t, r.out, "Method: migrator")
		require.Contains(t, r.out, "StorageVersionMigration "+n.CRD)
	default:
		require.Contains(t, r.out, "Method: rewrite (the cluster does not serve storagemigration.k8s.io/v1")
		require.Contains(t, r.out, "default/red is frozen")
	}
	if kubeMinor(t, e) >= 37 {
		svms, err := e.dyn.Resource(svmGVR).List(tctx(t), metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range svms.Items {
			require.NotContainsf(t, s.GetName(), n.CRD, "StorageVersionMigration %s was left behind", s.GetName())
		}
	}

	// The removal of v1alpha1 stays blocked.
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/3-v1alpha1-unserved.yaml")}, preflightFlag)
	before := e.snapshot(t, n)
	r = e.deploy(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml", n.marker())}, preflightFlag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "storedVersionRemoval", n.CRD, "v1alpha1")
	e.requireUnchanged(t, n, before)

	if trims {
		r = e.migrate(t, "--crd", n.CRD, "-y", "--method=migrator")
		require.Equalf(t, 1, r.exitCode, "output:\n%s", r.out)
		require.Contains(t, r.out, "--method migrator: storage version migrator refused: "+
			"the storage version migrator of Kubernetes "+gitVersion+" trims")
		require.Contains(t, r.out, "use --method rewrite (--method auto picks it on this version)")
		require.False(t, strings.Contains(r.out, "StorageVersionMigration "+n.CRD), "no migration created")
		require.Equal(t, []string{"v1alpha1", "v1"}, e.storedVersions(t, n))
	}

	unfreeze()
	r = e.migrate(t, "--crd", n.CRD, "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Equal(t, []string{"v1"}, e.storedVersions(t, n))
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/4-v1-only.yaml")}, preflightFlag)
	require.Len(t, e.objectVersions(t, n, "v1"), 4)
}

// TestMigratePlaceholderManagedFieldsEntry: the migration leaves, on an
// object all of whose managedFields entries it dropped (a conversion
// webhook whose versions declare other fields), one placeholder entry: an
// Apply entry of kapp-crd-migrate-storage owning metadata.name, written by
// an update of that field manager. The apiserver keeps it as written, and
// the next server-side apply of another value by a manager takes the field
// without a conflict; on an object with no entry at all the apiserver
// gives every field to "before-first-apply" first, and the same apply
// conflicts.
func TestMigratePlaceholderManagedFieldsEntry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "migrate/2-v1-storage.yaml")}, preflightFlag)
	ri := e.dyn.Resource(n.gvr("v1")).Namespace("default")
	placeholder := metav1.ManagedFieldsEntry{Manager: "kapp-crd-migrate-storage", Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: group + "/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:name":{}}}`)}

	for _, tc := range []struct {
		name        string
		entries     []metav1.ManagedFieldsEntry
		wantConflct bool
	}{
		{name: "placeholder", entries: []metav1.ManagedFieldsEntry{placeholder}},
		{name: "none", entries: []metav1.ManagedFieldsEntry{{}}, wantConflct: true},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": n.Kind,
			"metadata": map[string]any{"name": tc.name, "namespace": "default"}, "spec": map[string]any{"color": "red"}}}
		created, err := untilServed(func() (*unstructured.Unstructured, error) {
			return ri.Create(tctx(t), obj, metav1.CreateOptions{FieldManager: "ctl"})
		})
		require.NoError(t, err)
		created.SetManagedFields(tc.entries)
		updated, err := ri.Update(tctx(t), created, metav1.UpdateOptions{FieldManager: "kapp-crd-migrate-storage"})
		require.NoError(t, err)
		got := updated.GetManagedFields()
		if tc.name == "placeholder" {
			require.Len(t, got, 1)
			got[0].Time = nil
			require.JSONEq(t, placeholder.FieldsV1.GetRawString(), got[0].FieldsV1.GetRawString())
			got[0].FieldsV1 = placeholder.FieldsV1
			require.Equal(t, placeholder, got[0], "kept as written")
		} else {
			require.Empty(t, got)
		}

		apply := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": n.Kind,
			"metadata": map[string]any{"name": tc.name, "namespace": "default"}, "spec": map[string]any{"color": "blue"}}}
		_, err = ri.Apply(tctx(t), tc.name, apply, metav1.ApplyOptions{FieldManager: "flux"})
		if tc.wantConflct {
			require.Truef(t, apierrors.IsConflict(err), "%s: %v", tc.name, err)
			require.ErrorContains(t, err, "before-first-apply")
		} else {
			require.NoErrorf(t, err, "%s", tc.name)
		}
	}
}
