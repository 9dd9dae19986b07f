package evaluation

import (
	"bytes"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckTiming: the check's timing line counts the bytes allocated and
// the garbage collections that happened in between; without a writer
// nothing is measured or printed.
func TestCheckTiming(t *testing.T) {
	var out bytes.Buffer
	line := regexp.MustCompile(`(?m)^CRDUpgradeSafety timing: check \d+ms \(allocated (\d+\.\d) MiB, (\d+) garbage collections\)$`)
	timing := StartCheckTiming(&out)
	sink = make([]byte, 64<<20) // large: counted at once, not in a per-CPU cache
	runtime.GC()
	timing.Print()
	m := line.FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	allocated, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, allocated, 64.0, out.String())
	require.NotEqual(t, "0", m[2], out.String())

	require.Nil(t, StartCheckTiming(nil))
	StartCheckTiming(nil).Print() // prints nothing, does not panic
}

var sink []byte
