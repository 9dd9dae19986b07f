package preflight

import (
	"errors"
	"fmt"
	"os"

	kpreflight "carvel.dev/kapp/pkg/kapp/preflight"
	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// EnvConfigVar names the environment variable that protects every deploy:
// when it names a file, the file's content is the `config` of a
// CRDUpgradeSafety preflightRules entry (mode, failMode, checks,
// exemptions, maxFindingsPerCRD) and every `kapp deploy` and `kapp
// app-group deploy` runs the check with it, as if its Config had that
// entry. A deploy's own Config entry takes precedence over the file, and
// --preflight still decides which checks run. It is how a cluster operator
// enables the check for every kapp-controller App: kapp-controller passes
// no --preflight flag to kapp, but its environment (see
// docs/kapp-controller.md).
const EnvConfigVar = "KAPP_CRD_UPGRADE_SAFETY_CONFIG"

// ErrEnvConfig is wrapped by every error about the file named by
// EnvConfigVar (next to config.ErrInvalidConfig when its content is
// invalid).
var ErrEnvConfig = errors.New("invalid " + EnvConfigVar)

// envDefaults is the CRDUpgradeSafety check as the registry of our kapp
// holds it: it makes the file named by EnvConfigVar the check's
// preflightRules entry of every deploy whose Config has none.
//
// kapp's Registry.SetConfig (kapp v0.66.0, pkg/kapp/preflight) calls, in
// a deploy, SetEnabled(has an entry) on every check unless --preflight was
// given, then SetConfig(the entry's config, nil without an entry) on every
// check. A nil config therefore means "no entry" (or an entry without
// `config:`, which then takes the file's settings too; `config: {}` asks for
// the built-in defaults). Whether --preflight was given is not visible to a
// check, so the Registry below tells it (flagGiven).
type envDefaults struct {
	*CRDUpgradeSafety
	// flagGiven is set once a --preflight flag is parsed: the command line
	// chose the checks, the file only configures.
	flagGiven bool
}

var _ kpreflight.Check = &envDefaults{}

// SetConfig applies the deploy's own entry when there is one and the
// file's settings otherwise; without --preflight, the file also enables
// the check. A file that cannot be read or decoded fails every deploy
// while the variable names it (as an invalid Config entry would): an
// operator's protection that silently did nothing would be a false green.
func (c *envDefaults) SetConfig(raw kpreflight.CheckConfig) error {
	fileCfg, ok, err := loadEnvConfig()
	if err != nil {
		return err
	}
	if !ok || raw != nil {
		return c.CRDUpgradeSafety.SetConfig(raw)
	}
	if !c.flagGiven {
		c.SetEnabled(true)
	}
	return c.CRDUpgradeSafety.SetConfig(fileCfg)
}

// loadEnvConfig reads and validates the file named by EnvConfigVar
// (config.ReadFile). ok is false when the variable is unset or empty. The
// returned map is the file's content, decoded by the caller with the same
// strict decoder as a Config entry; it is validated here so that errors
// name the file.
func loadEnvConfig() (raw map[string]any, ok bool, err error) {
	path := os.Getenv(EnvConfigVar)
	if path == "" {
		return nil, false, nil
	}
	_, raw, err = config.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrEnvConfig, err)
	}
	return raw, true, nil
}
