package preflight

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
)

// TestCheckTiming: a deploy's check prints its wall time with the bytes it
// allocated and the garbage collections they caused, the figures
// hack/bench-deploy.sh reports (evaluation.CheckTiming measures them).
func TestCheckTiming(t *testing.T) {
	var out bytes.Buffer
	defer func(f func() io.Writer) { timingOut = f }(timingOut)
	timingOut = func() io.Writer { return &out }
	line := regexp.MustCompile(`(?m)^CRDUpgradeSafety timing: check \d+ms \(allocated (\d+\.\d) MiB, (\d+) garbage collections\)$`)

	check, _ := newCheck(t, &evaluationtest.Cluster{}, nil)
	require.NoError(t, check.Run(context.Background(), deployGraph(t, "",
		[]ctlres.Resource{live(t, oldCRD)}, []ctlres.Resource{res(t, safeCRD)})))
	require.Regexp(t, line, out.String())
}
