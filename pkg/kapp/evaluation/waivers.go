package evaluation

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// waivedSettings returns cfg with the waivers of the plan's CRDs added as
// exemptions (config.WaiverOf): the annotations of each new CRD, and of
// each CRD a removal deletes. The engine's exemptions then apply them, as
// they apply the settings' own; the preflight, the tools command and the
// webhook all evaluate through here. An invalid waiver fails the run
// (config.ErrInvalidWaiver).
func waivedSettings(plan Plan, cfg *config.Settings) (*config.Settings, error) {
	var waivers []config.Exemption
	add := func(name string, annotations map[string]string) error {
		w, err := config.WaiverOf(name, annotations)
		if w != nil {
			waivers = append(waivers, *w)
		}
		return err
	}
	for _, p := range plan.Pairs {
		if err := add(p.New.Name, p.New.Annotations); err != nil {
			return nil, err
		}
	}
	for _, r := range plan.Removals {
		if err := add(r.CRD.Name, r.CRD.Annotations); err != nil {
			return nil, err
		}
	}
	return cfg.WithWaivers(waivers), nil
}
