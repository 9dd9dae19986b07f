package objects

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of ownerReferences: dependents naming a removed version of the CRD's kind.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckOwnerReferences}, Runs: finding.RunsLive, Remedy: finding.RemedyRepointOwners})

// OwnerReferencesReader is the ownerReferences live check: when an update
// removes versions of a CRD, the objects of any kind whose ownerReferences
// name the CRD's kind at one of them (read as metadata by the caller) are
// dependents the garbage collector can no longer resolve their owner for:
// they are no longer deleted with it.
type OwnerReferencesReader struct {
	crd, kind, group string
	storage          string
	removed          []string
	acc              map[string]*mfAcc // by version
	read             int
	unreadable       []UnreadableResource
}

// UnreadableResource is a resource whose objects' ownerReferences could
// not be read: the dependents there are unknown.
type UnreadableResource struct {
	Resource string // as kubectl spells it: "configmaps", "deployments.apps"
	// Forbidden: the reader's identity may not list it (RBAC); otherwise
	// the apiserver could not list it (an aggregated API down).
	Forbidden bool
	// Err is why (the apiserver's answer).
	Err error
}

// NewOwnerReferencesReader returns the reader for an update of old to new,
// nil when the update removes no version.
func NewOwnerReferencesReader(old, new *apiextv1.CustomResourceDefinition) *OwnerReferencesReader {
	newVersions := checks.VersionsByName(new)
	var removed []string
	for _, v := range old.Spec.Versions {
		if _, ok := newVersions[v.Name]; !ok {
			removed = append(removed, v.Name)
		}
	}
	if len(removed) == 0 {
		return nil
	}
	r := &OwnerReferencesReader{crd: new.Name, kind: new.Spec.Names.Kind, group: new.Spec.Group, removed: removed,
		acc: map[string]*mfAcc{}}
	for _, v := range new.Spec.Versions {
		if v.Storage {
			r.storage = v.Name
		}
	}
	return r
}

// Owner is what the dependents' ownerReferences are matched by: the
// apiVersions of the removed versions, and the kind.
func (r *OwnerReferencesReader) Owner() (apiVersions []string, kind string) {
	for _, v := range r.removed {
		apiVersions = append(apiVersions, r.group+"/"+v)
	}
	return apiVersions, r.kind
}

// Add records a dependent: an object of resource (namespace/name or name)
// whose ownerReference names ownerAPIVersion.
func (r *OwnerReferencesReader) Add(ownerAPIVersion, resource, name string) {
	_, version, _ := strings.Cut(ownerAPIVersion, "/")
	a := r.acc[version]
	if a == nil {
		a = &mfAcc{managers: map[string]bool{}}
		r.acc[version] = a
	}
	a.objects++
	a.managers[resource] = true
	object := resource + " " + name
	i := sort.Search(len(a.examples), func(i int) bool { return a.examples[i].Object >= object })
	if i >= finding.MaxExamples {
		return
	}
	a.examples = slices.Insert(a.examples, i, finding.ObjectEffect{Object: object, Field: "metadata.ownerReferences", Value: ownerAPIVersion})
	if len(a.examples) > finding.MaxExamples {
		a.examples = a.examples[:finding.MaxExamples]
	}
}

// Done records how many objects were read, and the resources that could
// not be.
func (r *OwnerReferencesReader) Done(read int, unreadable []UnreadableResource) {
	r.read, r.unreadable = read, unreadable
}

// Findings are the ownerReferences findings: per removed version that
// dependents name, an error with its impact; where resources could not be
// read, one finding naming them (dependents there are unknown), which
// failMode decides as for any live check that cannot run: an error under
// closed, a warning under open. Its remedy names the resources the
// reader's identity may not list (the webhook's role grants them with
// `kapp tools crd-upgrade-safety-webhook rbac --dependents`).
func (r *OwnerReferencesReader) Findings(cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, r.crd)
	if !p.Settings.Checks.CRD.OwnerReferences.Enabled {
		return nil
	}
	for _, v := range r.removed {
		a := r.acc[v]
		if a == nil {
			continue
		}
		resources := make([]string, 0, len(a.managers))
		for res := range a.managers {
			resources = append(resources, res)
		}
		slices.Sort(resources)
		before := len(p.Findings)
		p.CRDLevelWith(config.EnforcementStrict, v, config.CheckOwnerReferences,
			&finding.Remedy{Action: finding.RemedyRepointOwners, Version: v}, finding.Change{Kind: "removed"},
			"version %q removed while ownerReferences of other objects name it (%s): the garbage collector can no longer "+
				"resolve their owner, so they are no longer deleted with it", v, strings.Join(resources, ", "))
		for i := before; i < len(p.Findings); i++ {
			imp := &finding.Impact{Source: finding.SourceCluster, Kind: "object", Objects: r.read, Affected: a.objects, VersionAffected: a.objects,
				Effects: []finding.EffectCount{{Effect: finding.EffectGCStopped, Objects: a.objects, Examples: a.examples}}}
			p.Findings[i].Impact = imp
			p.Findings[i].Remedy = p.Findings[i].Remedy.WithObjects(imp)
		}
	}
	if len(r.unreadable) > 0 {
		fail := p.Settings.FailDecisionFor(config.FailOwnerReferencesUnread, nil)
		var names, why, forbidden []string
		for _, u := range r.unreadable {
			names = append(names, u.Resource)
			if u.Forbidden { // the apiserver's words for a 403 of a metadata list say little ("unknown")
				forbidden = append(forbidden, u.Resource)
				why = append(why, u.Resource+": forbidden")
			} else {
				why = append(why, fmt.Sprintf("%s: %v", u.Resource, u.Err))
			}
		}
		slices.Sort(names)
		slices.Sort(forbidden)
		remedy := &finding.Remedy{Action: finding.RemedyReadDependents, Resources: forbidden}
		if len(forbidden) > 0 {
			remedy.Command = finding.DependentsRBACCommand
		}
		p.CRDLevelWith(fail.Decision.Enforcement(), "", config.CheckOwnerReferences, remedy, finding.Change{Kind: "unreadable", New: strings.Join(names, ",")},
			"the ownerReferences of %d %s could not be read, so dependents of the removed %s there are unknown (failMode %s): %s",
			len(r.unreadable), plural.Of(len(r.unreadable), "resource", "resources"), plural.Of(len(r.removed), "version", "versions"),
			fail.Mode, finding.SummarizeList(why))
	}
	return p.Judged(p.Findings)
}
