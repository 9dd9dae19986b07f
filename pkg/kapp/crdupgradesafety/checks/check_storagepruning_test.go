package checks

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestStoragePruning(t *testing.T) {
	const target = `{type: object, properties: {target: {type: string}}}`
	const withPolicy = `{type: object, properties: {target: {type: string}, accessPolicy: {type: string}}}`
	v1beta1 := enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: true, Spec: target}
	cases := []struct {
		name     string
		old, new *apiextv1.CustomResourceDefinition
		config   func(*config.Settings)
		want     []string
	}{
		{name: "a new served version with a field the storage version cannot hold: pruned on every write through it",
			old: enginetest.NewCRD(t, v1beta1), new: enginetest.NewCRD(t, v1beta1, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy}),
			want: []string{"error storagePruning v1beta3 ^.spec.accessPolicy: data loss: pruned from every write through v1beta3: the storage version v1beta1 does not declare it (conversion None)"}},
		{name: "a field added to the storage version only: a read-modify-write through the other version drops it (a warning)",
			old:  enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: target}, v1beta1),
			new:  enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: target}, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: true, Spec: withPolicy}),
			want: []string{"warning storagePruning v1alpha1 ^.spec.accessPolicy: data loss: missing from v1alpha1's view: the storage version v1beta1 holds it, a read-modify-write through v1alpha1 drops it (conversion None)"}},
		{name: "readModifyWriteEnforcement None",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: target}, v1beta1),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: target}, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: true, Spec: withPolicy}),
			config: func(c *config.Settings) {
				c.Checks.CRD.StoragePruning.ReadModifyWriteEnforcement = config.EnforcementNone
			},
			want: []string{}},
		{name: "what the old CRD already lost is not the update's doing",
			old:  enginetest.NewCRD(t, v1beta1, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy}),
			new:  enginetest.NewCRD(t, v1beta1, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy}),
			want: []string{}},
		{name: "a new storage version that lacks a field the old storage version lacked too: the loss the old CRD already had",
			old: enginetest.NewCRD(t, v1beta1, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy}),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: false, Spec: target}, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy},
				enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: target}),
			want: []string{}},
		{name: "a new storage version that lacks a field the old storage version held: lost",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: true, Spec: withPolicy}, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy}),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: false, Spec: withPolicy}, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy},
				enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: target}),
			want: []string{
				"error storagePruning v1beta1 ^.spec.accessPolicy: data loss: pruned from every write through v1beta1: the storage version v1 does not declare it (conversion None)",
				"error storagePruning v1beta3 ^.spec.accessPolicy: data loss: pruned from every write through v1beta3: the storage version v1 does not declare it (conversion None)"}},
		{name: "an unserved version loses nothing",
			old: enginetest.NewCRD(t, v1beta1), new: enginetest.NewCRD(t, v1beta1, enginetest.TestVersion{Name: "v1beta3", Served: false, Storage: false, Spec: withPolicy}),
			want: []string{}},
		{name: "a conversion webhook may carry the field",
			old: enginetest.NewCRD(t, v1beta1), new: enginetest.With(enginetest.NewCRD(t, v1beta1, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy}), enginetest.WebhookConversion),
			want: []string{}},
		{name: "disabled",
			old: enginetest.NewCRD(t, v1beta1), new: enginetest.NewCRD(t, v1beta1, enginetest.TestVersion{Name: "v1beta3", Served: true, Storage: false, Spec: withPolicy}),
			config: func(c *config.Settings) {
				c.Checks.CRD.StoragePruning.Enabled = false
				c.Checks.ServedVersion.Enabled = false
			},
			want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			var got []string
			for _, f := range Compare(tc.old, tc.new, &cfg) {
				if f.Check == config.CheckStoragePruning {
					got = append(got, strings.Join(enginetest.Render([]finding.Finding{f}), ""))
				}
			}
			if got == nil {
				got = []string{}
			}
			require.Equal(t, tc.want, got)
		})
	}
}
