package finding

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// Descriptor is what a check is, declared beside the check in its own file
// (Register): the IDs its findings carry, how it runs, its remedy, whether
// it loses stored data and whether unaffectedEnforcement may make its
// findings warnings. The policy and ApplyImpacts read these facts here
// and nowhere else; whether a check may be waived is config's
// (config.Waivable), read through Waivable. Adding a check touches its
// own file (the check and its descriptor), its config type and its docs
// section (TestEveryCheckHasADescriptor).
type Descriptor struct {
	// IDs are the check IDs (config.Check*) of its findings; a check that
	// judges several keywords alike (the bounds) has one ID per keyword.
	IDs []string
	// Runs is how the engine runs it.
	Runs Run
	// Remedy is the safe way forward of its findings, unless the check
	// knows a more specific one (Draft.Remedy).
	Remedy RemedyAction
	// Loss is whether its findings lose stored data.
	Loss Loss
	// Unaffected is whether unaffectedEnforcement Warn may make a finding
	// proven to affect no stored object a warning.
	Unaffected Unaffected
}

// Run is how the engine runs a check.
type Run string

const (
	// RunsOnCRD: once per pair, on the CRDs (scope, versions, status).
	RunsOnCRD Run = "crd"
	// RunsOnProperty: at every node of the walk of each version's schema
	// (checks.sameVersion and checks.servedVersion).
	RunsOnProperty Run = "property"
	// RunsOnVersionPair: on the pairs of served versions of the new CRD.
	RunsOnVersionPair Run = "versionPair"
	// RunsLive: on what the cluster (or samples) hold: stored objects,
	// their metadata, a dry run.
	RunsLive Run = "live"
	// RunsOnSettings: on the run's settings and findings (staleWaiver).
	RunsOnSettings Run = "settings"
)

// Loss is whether a check's findings lose stored data.
type Loss string

const (
	// LossNone: a finding loses no stored data by what it is (reading the
	// stored objects may still show data pruned: Impact).
	LossNone Loss = ""
	// LossAlways: every finding loses stored data whatever the objects
	// read hold (a CRD deleted, a stored version removed).
	LossAlways Loss = "always"
	// LossWhereStored: a finding loses whatever is stored where it is (a
	// field removed, unknown fields no longer kept); once the stored
	// objects are read, they decide (data pruned or not).
	LossWhereStored Loss = "whereStored"
)

// Unaffected is whether unaffectedEnforcement Warn applies to a check's
// findings about a field.
type Unaffected string

const (
	// UnaffectedNever: its findings stay errors however few objects they
	// affect: a change clients see without any object (removed versions,
	// scope, subresources, selectable fields, list map keys), a CRD
	// deletion, the apiserver's refusal, a change no check understands.
	// Only where the read of the objects sees the whole risk (a change of
	// what a value may be) may an unaffected finding warn.
	UnaffectedNever Unaffected = ""
	// UnaffectedWarns: a finding proven to affect no stored object may be
	// a warning.
	UnaffectedWarns Unaffected = "warns"
	// UnaffectedWarnsUnlessClientFacing: as UnaffectedWarns, but not a
	// finding that breaks clients whatever the objects hold
	// (Finding.ClientFacing).
	UnaffectedWarnsUnlessClientFacing Unaffected = "warnsUnlessClientFacing"
)

// Waivable reports whether a waiver, an acceptance or annotationWaivers may
// name the check (config.Waivable: config keeps the one list).
func (d *Descriptor) Waivable() bool { return config.Waivable(d.IDs[0]) }

// unaffectedWarns reports whether unaffectedEnforcement Warn may make f,
// a finding of d, a warning.
func (d *Descriptor) unaffectedWarns(f *Finding) bool {
	switch d.Unaffected {
	case UnaffectedWarns:
		return true
	case UnaffectedWarnsUnlessClientFacing:
		return !f.ClientFacing
	}
	return false
}

var (
	descriptorsMu sync.RWMutex
	descriptors   = map[string]*Descriptor{}
)

// Register records the descriptor of a check and returns it; each check's
// file declares its own (var typeCheck = finding.Register(...)). A check ID
// described twice, or none, panics: a programming error the package's
// initialization shows at once.
func Register(d Descriptor) *Descriptor {
	if len(d.IDs) == 0 || d.Runs == "" || d.Remedy == "" {
		panic(fmt.Sprintf("finding.Register: descriptor %+v needs IDs, Runs and Remedy", d))
	}
	descriptorsMu.Lock()
	defer descriptorsMu.Unlock()
	p := &d
	for _, id := range d.IDs {
		if _, dup := descriptors[id]; dup {
			panic(fmt.Sprintf("finding.Register: check %s described twice", id))
		}
		descriptors[id] = p
	}
	return p
}

// DescriptorOf returns the descriptor of a check ID, nil when no loaded
// package describes it.
func DescriptorOf(check string) *Descriptor {
	descriptorsMu.RLock()
	defer descriptorsMu.RUnlock()
	return descriptors[check]
}

// Descriptors returns every descriptor registered, each once, ordered by
// its first ID.
func Descriptors() []*Descriptor {
	descriptorsMu.RLock()
	defer descriptorsMu.RUnlock()
	var out []*Descriptor
	for _, d := range descriptors {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IDs[0] < out[j].IDs[0] })
	return out
}

// staleWaiverCheck: a waiver that matches none of its CRD's findings
// (StaleWaivers).
var _ = Register(Descriptor{IDs: []string{config.CheckStaleWaiver}, Runs: RunsOnSettings, Remedy: RemedyRemoveWaiver})
