package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Temporary until the engine lands.
func compare(old, new *apiextv1.CustomResourceDefinition, cfg *config.CRDUpgradeSafety) []Finding {
	return nil
}
func validateExisting(newCRD *apiextv1.CustomResourceDefinition, objs []map[string]any, cfg *config.CRDUpgradeSafety) ([]Finding, error) {
	return nil, nil
}
func deletion(crdName string, count int, cfg *config.CRDUpgradeSafety) []Finding { return nil }
