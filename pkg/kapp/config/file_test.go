package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestParseFile(t *testing.T) {
	raw, err := config.ParseFile([]byte("# only a comment\n"))
	require.NoError(t, err)
	require.Empty(t, raw)
	raw, err = config.ParseFile([]byte("---\nmode: warn\n---\n"))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"mode": "warn"}, raw)
	_, err = config.ParseFile([]byte("[1, 2]"))
	require.ErrorContains(t, err, "got a list")
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	require.NoError(t, os.WriteFile(path, []byte("mode: warn\n"), 0o644))
	cfg, raw, err := config.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, config.ModeWarn, cfg.Mode)
	require.Equal(t, map[string]any{"mode": "warn"}, raw)

	require.NoError(t, os.WriteFile(path, []byte("mode: sometimes\n"), 0o644))
	_, _, err = config.ReadFile(path)
	require.ErrorIs(t, err, config.ErrInvalidConfig)
	require.ErrorContains(t, err, "file "+path+": mode: unknown value")

	_, _, err = config.ReadFile(path + ".missing")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "file "+path+".missing: open ")
}

// TestFingerprintWrittenAsNumber: a fingerprint of digits, or of digits
// and one e, written unquoted reads as a number in YAML. A settings file
// (ParseFile) keeps the text and takes it as written; settings that reach
// Decode already decoded (a kapp Config's config map) are an error naming
// the key path and saying to quote it; quoted, every form is taken.
func TestFingerprintWrittenAsNumber(t *testing.T) {
	cases := []struct {
		name, fp string
		number   bool // YAML reads it unquoted as a number
	}{
		{"e-notation", "94583743e021", true},
		{"leading zero and an e: a string already", "0458374e3021", false},
		{"all digits", "123456789012", true},
		{"leading zeros, decimal digits", "000123456789", true},
		{"leading zero, octal digits", "001234567012", true},
		{"hex that is not a number", "1a2b3c4d5e6f", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, key := range []string{"waivers", "exemptions"} {
				unquoted := key + ":\n- fingerprint: " + tc.fp + "\n  reason: reviewed\n"
				raw, err := config.ParseFile([]byte(unquoted))
				require.NoError(t, err)
				cfg, err := config.Decode(raw)
				require.NoError(t, err, "a settings file keeps the text of %s", tc.fp)
				require.Len(t, cfg.Waivers, 1)
				require.Equal(t, tc.fp, cfg.Waivers[0].Fingerprint)

				inline := key + ": [{fingerprint: " + tc.fp + ", reason: reviewed}]\n"
				raw, err = config.ParseFile([]byte(inline))
				require.NoError(t, err)
				cfg, err = config.Decode(raw)
				require.NoError(t, err, "flow style keeps the text of %s", tc.fp)
				require.Equal(t, tc.fp, cfg.Waivers[0].Fingerprint)

				var decoded map[string]any // what a kapp Config hands on: no text
				require.NoError(t, yaml.Unmarshal([]byte(unquoted), &decoded))
				_, err = config.Decode(decoded)
				_, isStr := decoded[key].([]any)[0].(map[string]any)["fingerprint"].(string)
				require.Equal(t, tc.number, !isStr, "YAML reads %s unquoted as a number", tc.fp)
				if !tc.number {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, config.ErrInvalidType)
					require.ErrorContains(t, err, key+"[0].fingerprint: must be a string, got a number: ")
					require.ErrorContains(t, err, "cannot be recovered from the number; quote it")
				}

				quoted := key + ":\n- fingerprint: \"" + tc.fp + "\"\n  reason: reviewed\n"
				require.NoError(t, yaml.Unmarshal([]byte(quoted), &decoded))
				cfg, err = config.Decode(decoded)
				require.NoError(t, err)
				require.Equal(t, tc.fp, cfg.Waivers[0].Fingerprint)
			}
		})
	}
}
