package migration

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestMigrateProbesTheConversionWebhook: every object is rewritten through
// the CRD's conversion webhook, so the migration probes it first and, when
// it loses a field or refuses an object, rewrites nothing and names them.
func TestMigrateProbesTheConversionWebhook(t *testing.T) {
	cases := []struct {
		name string
		hook conversiontest.Hook
		want []string // in the error; none: the migration runs
	}{
		{name: "lossless: migrated", hook: conversiontest.Hook{}},
		{name: "lossy: nothing rewritten, the field and the object named", hook: conversiontest.Hook{Lossy: true},
			want: []string{"nothing rewritten", "crd widgets.example.com version v1 field ^.spec.color: [conversionWebhook] data loss: lost on a round trip", "1 of 2 objects: ns/a"}},
		{name: "failing on an object: nothing rewritten, the object named", hook: conversiontest.Hook{FailLabel: true},
			want: []string{"nothing rewritten", "version v1 -> v2: [conversionWebhook] refused", "1 of 2 objects: ns/c"}},
		{name: "not answering: nothing rewritten, not verified", hook: conversiontest.Hook{HttpStatus: 503},
			want: []string{"nothing rewritten", "conversion not verified"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd := conversiontest.Serve(t, &tc.hook)
			crd.UID = "uid-widgets"
			crd.Status.Conditions = []apiextv1.CustomResourceDefinitionCondition{{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}
			f := newFakeMigrationCluster(toUnstructured(crd))
			for _, w := range conversiontest.Widgets() {
				if w.GetAPIVersion() == "example.com/v1" {
					f.objects[objectName(w.GetNamespace(), w.GetName())] = &fakeObject{u: w, storedAt: "v1"}
				}
			}
			_, err := runMigrate(t, f, migrateRun{names: []string{crd.Name}, method: MethodRewrite})
			if tc.want == nil {
				require.NoError(t, err)
				require.Equal(t, map[string]int{"v2": 2}, f.storedAt())
				return
			}
			require.ErrorIs(t, err, ErrConversionUnsafe)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.Zero(t, f.writes, "nothing rewritten")
			require.Equal(t, map[string]int{"v1": 2}, f.storedAt())
		})
	}
}
