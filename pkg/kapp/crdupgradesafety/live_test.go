package crdupgradesafety

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// memoryDependents names one dependent of the owner at every version
// asked, or fails with err.
type memoryDependents struct{ err error }

func (m memoryDependents) DependentsOf(_ context.Context, apiVersions []string, _ string,
	add func(ownerAPIVersion, resource, name string)) (int, []UnreadableResource, error) {
	if m.err != nil {
		return 0, nil, m.err
	}
	for _, v := range apiVersions {
		add(v, "configmaps", "ns/dependent")
	}
	return 3, nil, nil
}

// TestJudgeLiveViews: the live views are steps of the one call, each
// judged with the pair's findings in its one policy: a replace's count,
// the managedFields and ownerReferences of an update that removes a
// version (read from the sources given), none when the source is absent
// or the check disabled; a source that fails fails the call; one that
// cannot list dependents skips ownerReferences.
func TestJudgeLiveViews(t *testing.T) {
	new := enginetest.CRDWithField(t, "{type: string}")
	old := new.DeepCopy()
	alpha := *old.Spec.Versions[0].DeepCopy()
	alpha.Name, alpha.Storage = "v1alpha1", false
	old.Spec.Versions = append([]apiextv1.CustomResourceDefinitionVersion{alpha}, old.Spec.Versions...)
	stored := enginetest.Widget("v1", "ns", "w", map[string]any{"x": "a"})
	stored["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "flux", "apiVersion": "example.com/v1alpha1"}}
	objs := memoryObjects{byVersion: map[string][]map[string]any{"v1": {stored}}}

	checksOf := func(fs []finding.Finding) map[string]int {
		out := map[string]int{}
		for _, f := range fs {
			out[f.Check]++
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		pair    Pair
		disable func(*config.CRDChecks)
		want    map[string]int
		wantErr bool
	}{
		{name: "replace", pair: Pair{Old: old, New: new, Compared: true, Deletion: &Deletion{Objects: 2, Cause: "update strategy always-replace"}},
			want: map[string]int{config.CheckCRDDeletion: 1}},
		{name: "removal", pair: Pair{Old: old, Deletion: &Deletion{Objects: 2}}, want: map[string]int{config.CheckCRDDeletion: 1}},
		{name: "removal uncounted", pair: Pair{Old: old, Deletion: &Deletion{Uncounted: true}}, want: map[string]int{config.CheckCRDDeletion: 1}},
		{name: "no objects to delete", pair: Pair{Old: old, Deletion: &Deletion{}}, want: map[string]int{}},
		{name: "managedFields and ownerReferences", pair: Pair{Old: old, New: new, Compared: true, ManagedFields: objs, Dependents: memoryDependents{}},
			want: map[string]int{config.CheckManagedFields: 1, config.CheckOwnerReferences: 1}},
		{name: "disabled", pair: Pair{Old: old, New: new, Compared: true, ManagedFields: objs, Dependents: memoryDependents{}},
			disable: func(c *config.CRDChecks) { c.ManagedFields.Enabled, c.OwnerReferences.Enabled = false, false },
			want:    map[string]int{}},
		{name: "no sources", pair: Pair{Old: old, New: new, Compared: true}, want: map[string]int{}},
		{name: "dependents not listed", pair: Pair{Old: old, New: new, Compared: true, Dependents: memoryDependents{err: ErrNoDependents}},
			want: map[string]int{}},
		{name: "dependents fail", pair: Pair{Old: old, New: new, Compared: true, Dependents: memoryDependents{err: errors.New("boom")}},
			wantErr: true},
		{name: "managedFields unreadable", pair: Pair{Old: old, New: new, Compared: true,
			ManagedFields: memoryObjects{err: &UnreadableError{Webhook: "service ns/conv", Err: errors.New("connection refused")}}},
			want: map[string]int{config.CheckExistingResources: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.disable != nil {
				tc.disable(&cfg.Checks.CRD)
			}
			before := finding.PoliciesMade()
			fs, err := Judge(context.Background(), tc.pair, &cfg, nil)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want the source's error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := finding.PoliciesMade() - before; n != 1 {
				t.Errorf("entered %d policies, want 1", n)
			}
			if got := checksOf(fs); !maps.Equal(got, tc.want) {
				t.Errorf("found %v, want %v:\n%s", got, tc.want, enginetest.GoldenText(fs))
			}
		})
	}
}
