package migration

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTableSaysWhatHappensToManagedFields: a CRD whose storedVersions are
// already trimmed but whose objects' managedFields name other versions
// says whether those entries move (their fields mean the same at the
// storage version) or may be dropped (a conversion webhook, and versions
// whose fields differ).
func TestTableSaysWhatHappensToManagedFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields fieldSetPolicy
		want   string
	}{
		{name: "conversion None", want: "5 (managedFields of 2 to move)"},
		{name: "webhook, same fields", fields: fieldSetPolicy{Webhook: true, Versions: []string{"v1alpha1", "v1"}, Same: []string{"v1", "v1alpha1"}},
			want: "5 (managedFields of 2 to move)"},
		{name: "webhook, fields differ", fields: fieldSetPolicy{Webhook: true, Versions: []string{"v1alpha1", "v1"}, Same: []string{"v1"}},
			want: "5 (managedFields of 2 to move or drop)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Name: "widgets.example.com", Storage: "v1", Stored: []string{"v1"}, Versions: []string{"v1alpha1", "v1"},
				Objects: 5, StaleManagedFields: 2, fields: tc.fields}
			table := Table([]*Plan{p})
			require.Len(t, table.Rows, 1)
			require.Equal(t, tc.want, table.Rows[0][3].String())
		})
	}
}
