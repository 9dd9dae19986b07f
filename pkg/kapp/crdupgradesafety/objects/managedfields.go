package objects

import (
	"slices"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ManagedFieldsReader is the managedFields live check: it reads the stored
// objects of an updated CRD (any version: managedFields do not change with
// the version read) and counts those whose metadata.managedFields entries
// name a version the update removes or stops serving. Server-side apply
// converts the object to each entry's version: once the version is gone
// from the CRD, every server-side apply of those objects, by any manager,
// fails until their managedFields are migrated (kubernetes/kubernetes#111937);
// client-side apply and kapp's updates do not. A version that stays
// unserved still converts: a warning (unservedEnforcement).
type ManagedFieldsReader struct {
	crd, kind, group string
	storage          string            // the new storage version, for the remedy
	versions         map[string]bool   // watched version -> removed (true) or unserved (false)
	acc              map[string]*mfAcc // by version
	objects          int
}

type mfAcc struct {
	objects  int
	managers map[string]bool
	examples []finding.ObjectEffect // the smallest names, sorted
}

// NewManagedFieldsReader returns the reader for an update of old to new,
// nil when the update removes or unserves no version (nothing to read).
func NewManagedFieldsReader(old, new *apiextv1.CustomResourceDefinition) *ManagedFieldsReader {
	newVersions := checks.VersionsByName(new)
	watched := map[string]bool{}
	for _, ov := range old.Spec.Versions {
		nv, ok := newVersions[ov.Name]
		switch {
		case !ok:
			watched[ov.Name] = true
		case ov.Served && !nv.Served:
			watched[ov.Name] = false
		}
	}
	if len(watched) == 0 {
		return nil
	}
	r := &ManagedFieldsReader{crd: new.Name, kind: new.Spec.Names.Kind, group: new.Spec.Group,
		versions: watched, acc: map[string]*mfAcc{}}
	for _, v := range new.Spec.Versions {
		if v.Storage {
			r.storage = v.Name
		}
	}
	return r
}

// Read reads a batch of stored objects. It keeps none of them.
func (r *ManagedFieldsReader) Read(objs []map[string]any) {
	for _, obj := range objs {
		r.objects++
		meta, _ := obj["metadata"].(map[string]any)
		entries, _ := meta["managedFields"].([]any)
		var byVersion map[string][]string
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			apiVersion, _ := entry["apiVersion"].(string)
			group, version, ok := strings.Cut(apiVersion, "/")
			if !ok || group != r.group {
				continue
			}
			if _, watched := r.versions[version]; !watched {
				continue
			}
			manager, _ := entry["manager"].(string)
			if byVersion == nil {
				byVersion = map[string][]string{}
			}
			if !slices.Contains(byVersion[version], manager) {
				byVersion[version] = append(byVersion[version], manager)
			}
		}
		for version, managers := range byVersion {
			r.add(version, objectName(obj), managers)
		}
	}
}

func (r *ManagedFieldsReader) add(version, name string, managers []string) {
	a := r.acc[version]
	if a == nil {
		a = &mfAcc{managers: map[string]bool{}}
		r.acc[version] = a
	}
	a.objects++
	for _, m := range managers {
		a.managers[m] = true
	}
	slices.Sort(managers)
	i := sort.Search(len(a.examples), func(i int) bool { return a.examples[i].Object >= name })
	if i >= finding.MaxExamples {
		return
	}
	a.examples = slices.Insert(a.examples, i, finding.ObjectEffect{Object: name, Field: "metadata.managedFields",
		Value: "managers " + strings.Join(managers, ", ")})
	if len(a.examples) > finding.MaxExamples {
		a.examples = a.examples[:finding.MaxExamples]
	}
}

// Findings are the managedFields findings of the objects read: one per
// watched version that entries name, with its impact (how many objects,
// which managers, the first names).
func (r *ManagedFieldsReader) Findings(cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, r.crd)
	c := p.Settings.Checks.CRD.ManagedFields
	if !c.Enabled {
		return nil
	}
	versions := make([]string, 0, len(r.acc))
	for v := range r.acc {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	for _, v := range versions {
		a := r.acc[v]
		managers := make([]string, 0, len(a.managers))
		for m := range a.managers {
			managers = append(managers, m)
		}
		slices.Sort(managers)
		command := "kapp tools crd-migrate-storage --crd " + r.crd
		if r.storage != "" {
			command += " --to " + r.storage
		}
		remedy := &finding.Remedy{Action: finding.RemedyMigrateManagedFields, Version: v, Command: command}
		before := len(p.Findings)
		if r.versions[v] {
			p.CRDLevelWith(config.EnforcementStrict, v, config.CheckManagedFields, remedy, finding.Change{Kind: "removed"},
				"version %q removed while managedFields of stored objects name it (managers %s): every server-side apply of them fails "+
					"(request to convert CR to an invalid group/version) until their managedFields are migrated",
				v, strings.Join(managers, ", "))
		} else {
			p.CRDLevelWith(c.UnservedEnforcement, v, config.CheckManagedFields, remedy, finding.Change{Kind: "unserved"},
				"version %q no longer served while managedFields of stored objects name it (managers %s): server-side apply still works, "+
					"but fails once the version is removed, until their managedFields are migrated",
				v, strings.Join(managers, ", "))
		}
		for i := before; i < len(p.Findings); i++ {
			imp := &finding.Impact{Source: finding.SourceCluster, Kind: r.kind, Objects: r.objects, Affected: a.objects, VersionAffected: a.objects,
				Effects: []finding.EffectCount{{Effect: finding.EffectSSARefused, Objects: a.objects, Examples: a.examples}}}
			p.Findings[i].Impact = imp
			p.Findings[i].Remedy = p.Findings[i].Remedy.WithObjects(imp)
		}
	}
	return p.Findings
}
