package crdupgradesafety

import (
	"slices"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/report"
)

// TestEveryCheckHasADescriptor: every check ID the configuration knows is
// described by exactly one descriptor, declared in the check's own file
// (finding.Register, reached through this front, which imports every
// room), every descriptor describes only known IDs and has its section in
// docs/checks.md, and config decides alone which checks may be waived.
func TestEveryCheckHasADescriptor(t *testing.T) {
	all := config.AllCheckIDs()
	for _, id := range all {
		d := finding.DescriptorOf(id)
		if d == nil {
			t.Errorf("check %s has no descriptor: declare finding.Register(finding.Descriptor{...}) in its file", id)
			continue
		}
		if d.Remedy == "" || d.Runs == "" {
			t.Errorf("check %s: descriptor without a remedy or a way to run: %+v", id, d)
		}
		if d.Waivable() != config.Waivable(id) {
			t.Errorf("check %s: the descriptor says waivable %t, config %t", id, d.Waivable(), config.Waivable(id))
		}
	}
	seen := map[string]bool{}
	for _, d := range finding.Descriptors() {
		for _, id := range d.IDs {
			if !slices.Contains(all, id) {
				t.Errorf("descriptor %v describes %s, which config does not know (config.AllCheckIDs)", d.IDs, id)
			}
			if seen[id] {
				t.Errorf("check %s described twice", id)
			}
			seen[id] = true
			if _, ok := report.HelpFor(id); !ok {
				t.Errorf("check %s has a descriptor but no section in docs/checks.md", id)
			}
		}
	}
	if len(seen) != len(all) {
		t.Errorf("%d check IDs described, config knows %d", len(seen), len(all))
	}
}

// TestDescriptorsDecide: the policy reads the descriptors, not a list of
// its own: a check's findings lose data, get their remedy and may be made
// warnings by unaffectedEnforcement as its descriptor says (a changed
// descriptor changes the finding).
func TestDescriptorsDecide(t *testing.T) {
	for _, d := range finding.Descriptors() {
		for _, id := range d.IDs {
			if got := finding.RemedyActionOf(id); got != d.Remedy {
				t.Errorf("%s: remedy %s, descriptor %s", id, got, d.Remedy)
			}
		}
	}
	loss := func(id string) finding.Loss { return finding.DescriptorOf(id).Loss }
	for id, want := range map[string]finding.Loss{
		config.CheckCRDDeletion: finding.LossAlways, config.CheckStoredVersionRemoval: finding.LossAlways,
		config.CheckExistingFieldRemoval: finding.LossWhereStored, config.CheckPreserveUnknownFields: finding.LossWhereStored,
		config.CheckType: finding.LossNone, config.CheckScope: finding.LossNone,
	} {
		if got := loss(id); got != want {
			t.Errorf("%s: loss %q, want %q", id, got, want)
		}
	}
}
