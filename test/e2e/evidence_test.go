package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Evidence for a trim of status.storedVersions counts only while it is
// current (docs/migrate.md, "Evidence for the trim"). The releases of the
// CRD are in testdata/evidence: 1 v1 only; 2 v2 the storage version; 3 v3
// the storage version; 4 storage back at v2; 5 v3 unserved; 6 v3 removed.
// Every version has the same schema and conversion None, so objects can be
// written at v3.

const (
	recordVersionAnnotation    = "migration.crd-upgrade-safety.kapp.k14s.io/storage-version"
	recordGenerationAnnotation = "migration.crd-upgrade-safety.kapp.k14s.io/generation"
)

// applyLikeKubectl updates n's CRD to a release of testdata/evidence as
// kubectl apply does: the live CRD's annotations (the migrate command's
// record among them) are kept. It returns the CRD's new generation.
func (e *env) applyLikeKubectl(t *testing.T, n names, release string) int64 {
	t.Helper()
	_, err := e.updateCRD(t, n, "evidence/"+release, false, nil)
	require.NoErrorf(t, err, "applying %s", release)
	return e.getCRD(t, n).GetGeneration()
}

// waitForStorageVersion waits until API discovery reports that the
// apiserver stores n's resource at version (its storageVersionHash, as
// pkg/kapp/migration computes it): only then are objects written stored
// there.
func (e *env) waitForStorageVersion(t *testing.T, n names, version string) {
	t.Helper()
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + n.Kind))
	want := base64.StdEncoding.EncodeToString(sum[:8])
	got := ""
	require.Eventuallyf(t, func() bool {
		// Any served version of the group reports the resource's
		// storage hash.
		for _, v := range []string{"v1", "v2", "v3"} {
			list, err := e.core.Discovery().ServerResourcesForGroupVersion(group + "/" + v)
			if err != nil {
				continue
			}
			for _, r := range list.APIResources {
				if r.Name == n.Plural {
					got = r.StorageVersionHash
					return got == want
				}
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "the apiserver does not store %s at %s: storageVersionHash %q, want %q", n.Plural, version, got, want)
}

// trimStoredVersions sets status.storedVersions of n's CRD as a user would
// by hand, with kubectl patch --subresource=status (through the dynamic
// client with kubectl's field manager when KUBECTL is not set).
func (e *env) trimStoredVersions(t *testing.T, n names, versions ...string) {
	t.Helper()
	if kubectl := os.Getenv("KUBECTL"); kubectl != "" {
		patch := `{"status":{"storedVersions":["` + strings.Join(versions, `","`) + `"]}}`
		out, err := exec.Command(kubectl, "--kubeconfig", e.kubeconfig, "patch", "crd", n.CRD, "--subresource=status",
			"--type=merge", "-p", patch).CombinedOutput()
		require.NoError(t, err, string(out))
		return
	}
	crd := e.getCRD(t, n)
	require.NoError(t, unstructured.SetNestedStringSlice(crd.Object, versions, "status", "storedVersions"))
	_, err := e.dyn.Resource(crdGVR).UpdateStatus(tctx(t), crd, metav1.UpdateOptions{FieldManager: "kubectl-patch"})
	require.NoError(t, err)
}

// TestStaleRecordDoesNotHideHandTrim: the migrate command's record of an
// earlier storage move is no evidence for a later trim by hand. With the
// CRD applied like kubectl applies it (the record stays on it): migrated
// to v2 (the command records v2 at that generation), v3 made the storage
// version and objects written (stored as v3; written at v2, so that their
// managedFields do not name v3 and only status.storedVersions says where
// they are stored), storage moved back to v2,
// v3 unserved, status.storedVersions trimmed by hand to [v2]. The removal
// of v3 is then a storedVersionRemoval error from the tools command
// (live) and from a deploy with the preflight, which changes nothing; the
// migrate command plans the CRD as needing migration, not done; after the
// migrate command's run the removal is safe. Before the rule (kapp of
// c79544f, on 1.37.2 and 1.35.0) the tools command exited 0, the deploy
// removed v3, and every LIST of the resource failed afterwards (request
// to convert CR from an invalid group/version: .../v3). That loss is not
// staged here as a control: while the resource cannot be listed, the
// ownerReferences scans of tests running beside this one fail closed.
func TestStaleRecordDoesNotHideHandTrim(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "evidence/1-v1.yaml")})
	e.createCRs(t, n, "evidence/crs-v1.yaml")
	// Run before the app's deletion: when a failing check let the removal
	// of v3 through, v3 is added back, or the objects stored as v3 keep
	// the CRD's deletion waiting on its finalizer (no LIST succeeds).
	t.Cleanup(func() {
		if e.getCRD(t, n) == nil {
			return
		}
		if spec, _ := e.crdVersions(t, n); !slices.Contains(spec, "v3") {
			if _, err := e.updateCRD(t, n, "evidence/5-v3-unserved.yaml", false, nil); err != nil {
				t.Errorf("adding v3 back before the cleanup: %v", err)
			}
		}
	})

	// Migrated to v2: the command's record names v2 at this generation.
	migrated := e.applyLikeKubectl(t, n, "2-v2-storage.yaml")
	r := e.migrate(t, "--crd", n.CRD, "--to", "v2", "--method=rewrite", "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Equal(t, []string{"v2"}, e.storedVersions(t, n))
	annotations := e.getCRD(t, n).GetAnnotations()
	require.Equal(t, "v2", annotations[recordVersionAnnotation])
	require.Equal(t, strconv.FormatInt(migrated, 10), annotations[recordGenerationAnnotation])

	// v3 the storage version, objects written at it; storage back at v2,
	// v3 unserved, status.storedVersions trimmed by hand.
	e.applyLikeKubectl(t, n, "3-v3-storage.yaml")
	e.waitForStorageVersion(t, n, "v3")
	e.createCRs(t, n, "evidence/crs-while-v3-stored.yaml")
	e.applyLikeKubectl(t, n, "4-v2-storage-again.yaml")
	e.waitForStorageVersion(t, n, "v2")
	generation := e.applyLikeKubectl(t, n, "5-v3-unserved.yaml")
	require.Equal(t, []string{"v2", "v3"}, e.storedVersions(t, n), "precondition: objects may be stored as v3")
	e.trimStoredVersions(t, n, "v2")
	require.Equal(t, []string{"v2"}, e.storedVersions(t, n))
	annotations = e.getCRD(t, n).GetAnnotations()
	require.Equal(t, "v2", annotations[recordVersionAnnotation], "precondition: the record of the first migration is still on the CRD")
	require.Equal(t, strconv.FormatInt(migrated, 10), annotations[recordGenerationAnnotation])
	require.Greater(t, generation, migrated, "precondition: the record is of an earlier generation")
	before := e.snapshot(t, n)
	require.Len(t, before.CRs, 4)

	removal := filepath.Join(crdDir(t, n, "evidence/6-v3-removed.yaml"), "crd.yaml")
	migrateHint := "kapp tools crd-migrate-storage --crd " + n.CRD + " --to v2"

	t.Run("the tools command (live) reports the removal of v3", func(t *testing.T) {
		r := e.kapp(t, "", "tools", "crd-upgrade-safety", "--file2", removal)
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "storedVersionRemoval", n.CRD, "v3", "trimmed by kubectl-patch")
	})

	t.Run("a deploy with the preflight is blocked and changes nothing", func(t *testing.T) {
		r := e.deploy(t, n.App, []string{crdDir(t, n, "evidence/6-v3-removed.yaml", n.marker())}, preflightFlag)
		requireBlocked(t, r)
		requireFinding(t, r.out, "storedVersionRemoval", n.CRD, "v3", migrateHint)
		e.requireUnchanged(t, n, before)
		spec, stored := e.crdVersions(t, n)
		require.Equal(t, []string{"v1", "v2", "v3"}, spec)
		require.Equal(t, []string{"v2"}, stored)
	})

	t.Run("the migrate command plans the CRD as not done", func(t *testing.T) {
		r := e.migrate(t, "--crd", n.CRD, "--to", "v2", "--method=rewrite", "--dry-run")
		require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
		require.Contains(t, r.out, "[v2] (trimmed by kubectl-patch without evidence: objects migrated again)")
		require.Contains(t, r.out, "Would rewrite the 4 objects of crd "+n.CRD+" at v2")
		require.NotContains(t, r.out, "Nothing to migrate")
		e.requireUnchanged(t, n, before)
	})
	if t.Failed() {
		return
	}

	// The way forward: the migrate command migrates every object again
	// (status.storedVersions listed in full first), records it at the
	// current generation and trims; then the removal deploys.
	r = e.migrate(t, "--crd", n.CRD, "--to", "v2", "--method=rewrite", "-y")
	require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
	require.Contains(t, r.out, "without evidence: objects migrated again")
	require.Equal(t, []string{"v2"}, e.storedVersions(t, n))
	r = e.deployOK(t, n.App, []string{crdDir(t, n, "evidence/6-v3-removed.yaml")}, preflightFlag)
	requireNoFinding(t, r.out, "storedVersionRemoval", n.CRD)
	after := e.snapshot(t, n) // a LIST fails if any object is still stored as v3
	require.Len(t, after.CRs, 4, "every object is still there and readable")
}
