package evaluation

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// waivedSettings returns cfg with the waivers of the plan's CRDs added
// (config.WaiversOf): the annotations of each new CRD, and of each CRD a
// removal deletes. The engine's policy then matches them against every
// finding, as it matches the settings' own; the preflight, the tools
// command and the webhook all evaluate through here. An invalid waiver
// fails the run (config.ErrInvalidWaiver). live says whether the run
// reads a cluster (config.Settings.Live: a loss it cannot count is never
// accepted).
//
// A waiver annotation counts only on the change that adds or changes it:
// when the waiver annotations of an update's new CRD are those of its old
// CRD, all of them and each with the same value, they were reviewed with
// an earlier change, and their waivers are carried over (CarriedOver):
// they waive nothing in this one, and the findings they match say so.
// What annotations may waive at all is the settings' annotationWaivers;
// no waiver waives a loss of stored data (config.JudgeWaivers).
func waivedSettings(plan Plan, cfg *config.Settings, live bool) (*config.Settings, error) {
	var waivers []config.Waiver
	add := func(name string, annotations map[string]string, carried bool) error {
		ws, err := config.WaiversOf(name, annotations)
		for i := range ws {
			ws[i].CarriedOver = carried
		}
		waivers = append(waivers, ws...)
		return err
	}
	for _, p := range plan.Pairs {
		carried := p.Old != nil && p.Old != p.New && config.SameWaiverAnnotations(p.Old.Annotations, p.New.Annotations)
		if err := add(p.New.Name, p.New.Annotations, carried); err != nil {
			return nil, err
		}
	}
	for _, r := range plan.Removals {
		if err := add(r.CRD.Name, r.CRD.Annotations, false); err != nil {
			return nil, err
		}
	}
	out := *cfg.WithWaivers(waivers)
	out.Live = live
	return &out, nil
}

// staleWaivers returns the staleWaiver warnings of a run: the waivers
// (settings and annotations) of the CRDs it evaluated, pairs and removals,
// that match none of their findings (finding.StaleWaivers). A
// waiver of a CRD the run did not evaluate is not judged.
func staleWaivers(pairs []Pair, removals []Removal, cfg *config.Settings, findings []finding.Finding) []finding.Finding {
	crds := make([]string, 0, len(pairs)+len(removals))
	for _, p := range pairs {
		crds = append(crds, p.New.Name)
	}
	for _, r := range removals {
		crds = append(crds, r.CRD.Name)
	}
	return finding.StaleWaivers(cfg, crds, findings)
}
