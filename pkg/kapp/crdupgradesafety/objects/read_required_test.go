package objects

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequiredWithSameDefaultAgreesWithAPIServer: a field made required
// that has the same default before and after is no finding, because the
// apiserver defaults before it validates: an object lacking the field, or
// holding null there, read or written under the new CRD passes the
// apiserver's own validation (the reader runs its pruning, defaulting and
// custom resource strategy).
func TestRequiredWithSameDefaultAgreesWithAPIServer(t *testing.T) {
	oldCRD := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {size: {type: string, default: M}}}`})
	withDefault := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, required: [size], properties: {size: {type: string, default: M}}}`})
	assert.Empty(t, checks.Compare(oldCRD, withDefault, nil))

	r, err := NewObjectReader(oldCRD, withDefault, "v1", finding.SourceSamples, nil, nil)
	require.NoError(t, err)
	r.Read([]map[string]any{
		enginetest.Widget("v1", "ns", "absent", map[string]any{}),
		enginetest.Widget("v1", "ns", "null", map[string]any{"size": nil}),
		enginetest.Widget("v1", "ns", "set", map[string]any{"size": "L"}),
	})
	res := r.Result()
	assert.Equal(t, 3, res.Objects())
	assert.Zero(t, res.Affected, "objects affected")
	assert.Empty(t, res.Residual)

	// Without the default, the same objects are refused: the test can fail.
	noDefault := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, required: [size], properties: {size: {type: string}}}`})
	r, err = NewObjectReader(oldCRD, noDefault, "v1", finding.SourceSamples, nil, nil)
	require.NoError(t, err)
	r.Read([]map[string]any{enginetest.Widget("v1", "ns", "absent", map[string]any{})})
	assert.Equal(t, 1, r.Result().Affected)
}
