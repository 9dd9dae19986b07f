package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of versionLifecycle: a version removed before it was deprecated.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckVersionLifecycle}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyDeprecateFirst})

// checkVersionLifecycle: a version may stop being served, or be removed,
// only after a release in which it was marked deprecated: true (Kubernetes'
// API deprecation policy, OLM's deprecation lifecycle): its clients then
// saw the apiserver's deprecation warning on every request before they get
// 404 Not Found. So a version the old CRD serves without deprecated: true
// that the new CRD no longer serves, or no longer has, is reported at
// notDeprecatedEnforcement (Warn by default). Marking it deprecated in the
// same update does not count: no release warned its clients.
//
// A version the old CRD no longer serves is not judged: it was retired in
// an earlier update. servedVersionRemoval reports the same versions for
// another reason (removed without first being unserved, or unserved at
// all): a finding of its own, unchanged by this one.
func checkVersionLifecycle(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	c := p.Settings.Checks.CRD.VersionLifecycle
	if !c.Enabled || !c.NotDeprecatedEnforcement.Reports() {
		return
	}
	newVersions := VersionsByName(new)
	for _, v := range old.Spec.Versions {
		if !v.Served || v.Deprecated {
			continue
		}
		nv, ok := newVersions[v.Name]
		switch {
		case !ok:
			p.CRDLevel(c.NotDeprecatedEnforcement, v.Name, config.CheckVersionLifecycle, finding.Change{Kind: "removed"},
				"served version %q removed without a release that marked it deprecated: true", v.Name)
		case !nv.Served:
			p.CRDLevel(c.NotDeprecatedEnforcement, v.Name, config.CheckVersionLifecycle, finding.Change{Kind: "unserved"},
				"version %q no longer served without a release that marked it deprecated: true: its clients had no deprecation warning", v.Name)
		}
	}
}
