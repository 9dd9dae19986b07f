package evaluation_test

import (
	"context"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestJudgeStoredVersions(t *testing.T) {
	cfg := config.Default()
	pair := func(before, after []string) (*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinition) {
		old := testcrd.MustCRD(t, testcrd.OldCRD)
		old.Generation = 4
		old.Status.StoredVersions = before
		crd := old.DeepCopy()
		crd.Status.StoredVersions = after
		return old, crd
	}

	old, crd := pair([]string{"v1alpha1", "v1"}, []string{"v1"})
	v, err := evaluation.JudgeStoredVersions(context.Background(), &evaluationtest.Cluster{}, old, crd, &cfg)
	require.NoError(t, err)
	require.Equal(t, []string{"v1alpha1"}, v.Removed)
	require.Empty(t, v.Evidence)
	require.Len(t, v.Findings, 1)
	f := v.Findings[0]
	require.Equal(t, config.CheckStoredVersionRemoval, f.Check)
	require.Equal(t, "v1alpha1", f.Version)
	require.Equal(t, "error", string(f.Severity))
	require.Equal(t, "kapp tools crd-migrate-storage --crd widgets.example.com --to v1", f.Remedy.Command)

	old.Annotations = storedversions.Record{Version: "v1", Generation: 4}.Annotations()
	v, err = evaluation.JudgeStoredVersions(context.Background(), &evaluationtest.Cluster{}, old, crd, &cfg)
	require.NoError(t, err)
	require.Empty(t, v.Findings)
	require.Contains(t, v.Evidence, "record")

	// A record of an earlier generation is stale: a storage move since
	// may have stored objects in the version the trim drops.
	old.Annotations = storedversions.Record{Version: "v1", Generation: 3}.Annotations()
	v, err = evaluation.JudgeStoredVersions(context.Background(), &evaluationtest.Cluster{}, old, crd, &cfg)
	require.NoError(t, err)
	require.Empty(t, v.Evidence)
	require.Len(t, v.Findings, 1)

	old, crd = pair([]string{"v1"}, []string{"v1", "v2"})
	v, err = evaluation.JudgeStoredVersions(context.Background(), &evaluationtest.Cluster{}, old, crd, &cfg)
	require.NoError(t, err)
	require.Empty(t, v.Removed)
	require.Empty(t, v.Findings)
}
