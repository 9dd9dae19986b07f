package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Compare compares the old CRD (from the cluster, or an old file) with the
// new one and returns every finding, sorted, with the policy of cfg
// applied, without reading any stored object (checks.Compare).
func Compare(old, new *apiextv1.CustomResourceDefinition, cfg *config.Settings) []finding.Finding {
	return checks.Compare(old, new, cfg)
}
