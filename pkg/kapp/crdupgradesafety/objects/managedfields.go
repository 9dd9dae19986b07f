package objects

import (
	"slices"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// The descriptor of managedFields: server-side apply entries at a removed or unserved version.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckManagedFields}, Runs: finding.RunsLive, Remedy: finding.RemedyMigrateManagedFields})

// ManagedFieldsReader is the managedFields live check: it reads the stored
// objects of an updated CRD (any version: managedFields do not change with
// the version read) and counts those whose metadata.managedFields entries
// name a version the update removes or stops serving. Server-side apply
// converts the object to each entry's version: once the version is gone
// from the CRD, every server-side apply of those objects, by any manager,
// fails until their managedFields are migrated (kubernetes/kubernetes#111937);
// client-side apply and kapp's updates do not. A version that stays
// unserved still converts: a warning (unservedEnforcement).
//
// On a cluster at 1.36 or older, an update that changes the CRD's
// conversion webhook (see conversionWebhookChanged) is watched too: while
// the webhook is down (a new one not yet serving, a wrong address), a
// write of an object whose managedFields entries name two or more versions
// drops all its managedFields (kubernetes#136919; 1.37 keeps them): a
// warning counting those objects.
type ManagedFieldsReader struct {
	crd, kind, group string
	storage          string            // the new storage version, for the remedy
	versions         map[string]bool   // watched version -> removed (true) or unserved (false)
	acc              map[string]*mfAcc // by version
	objects          int
	// conversion: the update changes the conversion webhook on a cluster
	// that drops managedFields when it is down; several counts the
	// objects whose entries name two or more versions.
	conversion bool
	several    *mfAcc
}

type mfAcc struct {
	objects  int
	managers map[string]bool
	examples []finding.ObjectEffect // the smallest names, sorted
}

// NewManagedFieldsReader returns the reader for an update of old to new on
// a cluster of Kubernetes version v, nil when there is nothing to read: the
// update removes or unserves no version and, below
// config.KubeVersionKeepingManagedFields, does not change the conversion
// webhook.
func NewManagedFieldsReader(old, new *apiextv1.CustomResourceDefinition, v config.KubeVersion) *ManagedFieldsReader {
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
	conversion := !v.AtLeast(config.KubeVersionKeepingManagedFields) && conversionWebhookChanged(old, new)
	if len(watched) == 0 && !conversion {
		return nil
	}
	r := &ManagedFieldsReader{crd: new.Name, kind: new.Spec.Names.Kind, group: new.Spec.Group,
		versions: watched, acc: map[string]*mfAcc{}, conversion: conversion, several: &mfAcc{managers: map[string]bool{}}}
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
		var named []string // the versions the entries name
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			apiVersion, _ := entry["apiVersion"].(string)
			group, version, ok := strings.Cut(apiVersion, "/")
			if !ok || group != r.group {
				continue
			}
			if !slices.Contains(named, version) {
				named = append(named, version)
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
			r.add(r.accOf(version), objectName(obj), managers, "managers ")
		}
		if r.conversion && len(named) > 1 {
			r.add(r.several, objectName(obj), named, "versions ")
		}
	}
}

func (r *ManagedFieldsReader) accOf(version string) *mfAcc {
	a := r.acc[version]
	if a == nil {
		a = &mfAcc{managers: map[string]bool{}}
		r.acc[version] = a
	}
	return a
}

// add counts the object name in a with its names (managers, or the
// versions its entries name), quoted after label in its example.
func (r *ManagedFieldsReader) add(a *mfAcc, name string, names []string, label string) {
	a.objects++
	for _, m := range names {
		a.managers[m] = true
	}
	slices.Sort(names)
	i := sort.Search(len(a.examples), func(i int) bool { return a.examples[i].Object >= name })
	if i >= finding.MaxExamples {
		return
	}
	a.examples = slices.Insert(a.examples, i, finding.ObjectEffect{Object: name, Field: "metadata.managedFields",
		Value: label + strings.Join(names, ", ")})
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
	r.conversionFinding(p)
	return p.Judged(p.Findings)
}

// conversionFinding adds the warning of a conversion webhook change while
// stored objects have managedFields entries at several versions (none
// when no object has).
func (r *ManagedFieldsReader) conversionFinding(p *finding.Policy) {
	a := r.several
	if !r.conversion || a.objects == 0 {
		return
	}
	versions := make([]string, 0, len(a.managers))
	for v := range a.managers {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	command := "kapp tools crd-migrate-storage --crd " + r.crd
	if r.storage != "" {
		command += " --to " + r.storage
	}
	before := len(p.Findings)
	p.CRDLevelWith(config.EnforcementWarn, "", config.CheckManagedFields,
		&finding.Remedy{Action: finding.RemedyWebhookBeforeWrites, Version: r.storage, Command: command, Detail: ManagedFieldsDropIssue},
		finding.Change{Kind: "conversionChanged", New: strings.Join(versions, ",")},
		"conversion webhook changed while managedFields of stored objects name several versions (%s): up to Kubernetes 1.36 "+
			"(judged for %s), a write of such an object while the conversion webhook is down drops all its managedFields (%s)",
		strings.Join(versions, ", "), p.Settings.KubeVersion, ManagedFieldsDropIssue)
	for i := before; i < len(p.Findings); i++ {
		imp := &finding.Impact{Source: finding.SourceCluster, Kind: r.kind, Objects: r.objects, Affected: a.objects, VersionAffected: a.objects,
			Effects: []finding.EffectCount{{Effect: finding.EffectManagedFieldsDropped, Objects: a.objects, Examples: a.examples}}}
		p.Findings[i].Impact = imp
		p.Findings[i].Remedy = p.Findings[i].Remedy.WithObjects(imp)
	}
}

// ManagedFieldsDropIssue is the Kubernetes issue of the managedFields that
// a write drops while the conversion webhook is down, fixed in 1.37.
const ManagedFieldsDropIssue = "kubernetes#136919"

// conversionWebhookChanged tells whether an update of old to new changes
// the conversion webhook the apiserver calls: new converts through a
// webhook and old did not, or through another one (its address, CA bundle
// or review versions differ).
func conversionWebhookChanged(old, new *apiextv1.CustomResourceDefinition) bool {
	nc := new.Spec.Conversion
	if nc == nil || nc.Strategy != apiextv1.WebhookConverter {
		return false
	}
	oc := old.Spec.Conversion
	if oc == nil || oc.Strategy != apiextv1.WebhookConverter {
		return true
	}
	return !equality.Semantic.DeepEqual(oc.Webhook, nc.Webhook)
}
