package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// svmCluster is a test cluster that also lists StorageVersionMigrations.
type svmCluster struct {
	*evaluationtest.Cluster
	svms  []unstructured.Unstructured
	lists int
}

func (c *svmCluster) ListStorageVersionMigrations(context.Context) ([]unstructured.Unstructured, error) {
	c.lists++
	return c.svms, nil
}

// statusRequest is a write of the status of the widgets CRD (storage v1,
// generation 3) that sets status.storedVersions from before to after.
func statusRequest(t *testing.T, before, after []string, edit func(old *apiextv1.CustomResourceDefinition)) *admissionv1.AdmissionRequest {
	t.Helper()
	old := testcrd.MustCRD(t, testcrd.OldCRD)
	old.Generation = 3
	old.Status.StoredVersions = before
	if edit != nil {
		edit(old)
	}
	crd := old.DeepCopy()
	crd.Status.StoredVersions = after
	req, err := webhooktest.Request(admissionv1.Update, crd, old)
	require.NoError(t, err)
	req.SubResource = "status"
	return req
}

func succeededSVM(name string, at time.Time) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"resource": map[string]any{"group": "example.com", "resource": "widgets"}},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Succeeded", "status": "True", "lastTransitionTime": at.UTC().Format(time.RFC3339)}}},
	}}
}

// migratorStarted: the cluster's migrator marked the CRD migrating with
// migration name at generation (as kube-controller-manager 1.37 words it).
func migratorStarted(name string, at time.Time, generation int64) func(*apiextv1.CustomResourceDefinition) {
	return func(old *apiextv1.CustomResourceDefinition) {
		old.Status.Conditions = append(old.Status.Conditions, apiextv1.CustomResourceDefinitionCondition{
			Type: apiextv1.StorageMigrating, Status: apiextv1.ConditionTrue, Reason: "MigrationRunning",
			Message:            "Migration " + name + " is running",
			LastTransitionTime: metav1.NewTime(at), ObservedGeneration: generation})
	}
}

func TestReviewStoredVersionsTrim(t *testing.T) {
	started := time.Now().Add(-time.Minute).Truncate(time.Second)

	t.Run("a trim by hand: denied, naming the version and the migrate command", func(t *testing.T) {
		r, logged := reviewer(t, nil, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), statusRequest(t, []string{"v1alpha1", "v1"}, []string{"v1"}, nil))
		require.False(t, resp.Allowed)
		msg := resp.Result.Message
		require.Contains(t, msg, "update of the status of CRD widgets.example.com")
		require.Contains(t, msg, `"v1alpha1"`)
		require.Contains(t, msg, "kapp tools crd-migrate-storage --crd widgets.example.com --to v1")
		require.Contains(t, (*logged)[0], "allowed=false")
	})

	t.Run("failMode open: allowed with a warning", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"failMode": "open"}, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), statusRequest(t, []string{"v1alpha1", "v1"}, []string{"v1"}, nil))
		require.True(t, resp.Allowed)
		require.Len(t, resp.Warnings, 1)
		require.Contains(t, resp.Warnings[0], "v1alpha1")
	})

	t.Run("the migrate command's record at the current generation: allowed", func(t *testing.T) {
		r, logged := reviewer(t, nil, &evaluationtest.Cluster{})
		record := func(generation int64) func(*apiextv1.CustomResourceDefinition) {
			return func(old *apiextv1.CustomResourceDefinition) {
				old.Annotations = storedversions.Record{Version: "v1", Generation: generation}.Annotations()
			}
		}
		resp := r.Review(context.Background(), statusRequest(t, []string{"v1alpha1", "v1"}, []string{"v1"}, record(3)))
		require.True(t, resp.Allowed)
		require.Empty(t, resp.Warnings)
		require.Contains(t, (*logged)[0], "the migrate command's record")

		// A record of an older spec proves nothing about this one.
		resp = r.Review(context.Background(), statusRequest(t, []string{"v1alpha1", "v1"}, []string{"v1"}, record(2)))
		require.False(t, resp.Allowed)
	})

	t.Run("the cluster's migrator: the migration the CRD's condition names succeeded: allowed", func(t *testing.T) {
		c := &svmCluster{Cluster: &evaluationtest.Cluster{}, svms: []unstructured.Unstructured{succeededSVM("widgets-abc", started.Add(5*time.Second))}}
		r, logged := reviewer(t, nil, nil)
		r.Cluster = c
		resp := r.Review(context.Background(), statusRequest(t, []string{"v1alpha1", "v1"}, []string{"v1"}, migratorStarted("widgets-abc", started, 3)))
		require.True(t, resp.Allowed, resp.Result)
		require.Contains(t, (*logged)[0], "StorageVersionMigration widgets-abc succeeded")
		require.Equal(t, 1, c.lists)
	})

	t.Run("the cluster's migrator: no proof", func(t *testing.T) {
		for name, tc := range map[string]struct {
			svms []unstructured.Unstructured
			edit func(*apiextv1.CustomResourceDefinition)
		}{
			"a migration that succeeded before this one started": {
				svms: []unstructured.Unstructured{succeededSVM("widgets-old", started.Add(-time.Hour))},
				edit: migratorStarted("widgets-abc", started, 3)},
			"a migration that succeeded after this one started, not the one the condition names": {
				svms: []unstructured.Unstructured{succeededSVM("widgets-other", started.Add(5*time.Second))},
				edit: migratorStarted("widgets-abc", started, 3)},
			"a migration started at another generation": {
				svms: []unstructured.Unstructured{succeededSVM("widgets-abc", started.Add(5*time.Second))},
				edit: migratorStarted("widgets-abc", started, 2)},
			"no migration marked on the CRD": {
				svms: []unstructured.Unstructured{succeededSVM("widgets-abc", started.Add(5*time.Second))}},
		} {
			t.Run(name, func(t *testing.T) {
				c := &svmCluster{Cluster: &evaluationtest.Cluster{}, svms: tc.svms}
				r, _ := reviewer(t, nil, nil)
				r.Cluster = c
				resp := r.Review(context.Background(), statusRequest(t, []string{"v1alpha1", "v1"}, []string{"v1"}, tc.edit))
				require.False(t, resp.Allowed)
			})
		}
	})

	t.Run("status writes that keep every stored version: allowed, nothing read", func(t *testing.T) {
		c := &svmCluster{Cluster: &evaluationtest.Cluster{}}
		r, logged := reviewer(t, nil, nil)
		r.Cluster = c
		resp := r.Review(context.Background(), statusRequest(t, []string{"v1"}, []string{"v1", "v2"}, nil))
		require.True(t, resp.Allowed)
		require.Zero(t, c.lists)
		require.True(t, strings.Contains((*logged)[0], "does not shrink"))
	})
}
