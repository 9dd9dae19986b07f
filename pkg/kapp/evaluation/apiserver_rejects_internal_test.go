package evaluation

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
)

// TestDryRunUnsupportedIsTheAPIServersWords pins the one piece of the
// apiserver's text a decision reads: the error its admission gives when a
// webhook with side effects meets a dry run is not a refusal of the
// change, while the same status code with other words is.
func TestDryRunUnsupportedIsTheAPIServersWords(t *testing.T) {
	_, refused := refusal(fmt.Errorf("dry run: %w", webhookerrors.NewDryRunUnsupportedErr("crds.example.com")))
	require.False(t, refused, "the apiserver's own dry-run-unsupported error must not read as a refusal")

	rs, refused := refusal(apierrors.NewBadRequest(`admission webhook "crds.example.com" denied the request: not today`))
	require.True(t, refused)
	require.Len(t, rs, 1)
}
