package evaluation

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
)

// waivedSettings returns cfg with the waivers of the plan's CRDs added
// (config.WaiversOf): the annotations of each new CRD, and of each CRD a
// removal deletes. The engine's policy then matches them against every
// finding, as it matches the settings' own; the preflight, the tools
// command and the webhook all evaluate through here. An invalid waiver
// fails the run (config.ErrInvalidWaiver).
func waivedSettings(plan Plan, cfg *config.Settings) (*config.Settings, error) {
	var waivers []config.Waiver
	add := func(name string, annotations map[string]string) error {
		ws, err := config.WaiversOf(name, annotations)
		waivers = append(waivers, ws...)
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

// staleWaivers returns the staleWaiver warnings of a run: the waivers
// (settings and annotations) of the CRDs it evaluated, pairs and removals,
// that match none of their findings (crdupgradesafety.StaleWaivers). A
// waiver of a CRD the run did not evaluate is not judged.
func staleWaivers(pairs []Pair, removals []Removal, cfg *config.Settings, findings []crdupgradesafety.Finding) []crdupgradesafety.Finding {
	crds := make([]string, 0, len(pairs)+len(removals))
	for _, p := range pairs {
		crds = append(crds, p.New.Name)
	}
	for _, r := range removals {
		crds = append(crds, r.CRD.Name)
	}
	return crdupgradesafety.StaleWaivers(cfg, crds, findings)
}
