package config

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKubeVersion(t *testing.T) {
	for _, s := range []string{"1.35", "1.36", "1.37", "v1.37"} {
		v, err := ParseKubeVersion(s)
		require.NoError(t, err, s)
		require.Equal(t, s[len(s)-4:], v.String())
	}
	for _, s := range []string{"", "1.34", "1.38", "1.37.2", "latest"} {
		_, err := ParseKubeVersion(s)
		require.True(t, errors.Is(err, ErrUnsupportedKubeVersion), s)
		require.ErrorContains(t, err, "expected one of 1.35, 1.36, 1.37")
	}
	require.Equal(t, "1.37", KubeVersion{}.String(), "the zero value is the newest supported version")
	require.True(t, KubeVersion{}.AtLeast(KubeVersionEnforcingNumericFormats))
	require.False(t, KubeVersion{1, 36}.AtLeast(KubeVersionEnforcingNumericFormats))
	require.True(t, KubeVersion{2, 0}.AtLeast(KubeVersionEnforcingNumericFormats))

	for in, want := range map[[2]string]KubeVersion{{"1", "37"}: {1, 37}, {"1", "35+"}: {1, 35}, {"1", "40"}: {1, 40}} {
		v, err := KubeVersionOfServer(in[0], in[1])
		require.NoError(t, err)
		require.Equal(t, want, v)
	}
	_, err := KubeVersionOfServer("", "")
	require.ErrorIs(t, err, ErrUnsupportedKubeVersion)
}
