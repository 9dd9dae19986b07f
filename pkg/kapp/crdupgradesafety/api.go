// Package crdupgradesafety is the comparison engine of the CRDUpgradeSafety
// check. It compares an old and a new CustomResourceDefinition and returns
// findings. It knows nothing of kapp or of the cluster: callers hand it CRD
// pairs (and, for live checks, the existing custom resources).
package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Severity of a finding after the policy (mode, failMode, exemptions) is applied.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding is one unsafe (or unhandled) change.
type Finding struct {
	CRD      string   `json:"crd"`
	Version  string   `json:"version"` // "" for CRD-level findings; "v1 -> v2" for servedVersion pairs
	Field    string   `json:"field"`   // "^.spec.foo[*].bar", "" for CRD-level findings
	Check    string   `json:"check"`   // a config.Check* ID
	Severity Severity `json:"severity"`
	Message  string   `json:"message"` // readable, with old -> new values
}

// Compare compares the old CRD (from the cluster, or an old file) with the
// new one and returns every finding, sorted, with the policy of cfg applied.
// old's status.storedVersions is used when set; otherwise old's storage
// version counts as stored.
func Compare(old, new *apiextv1.CustomResourceDefinition, cfg *config.Settings) []Finding {
	return compare(old, new, cfg)
}

// ValidateExisting validates existing custom resources of a CRD against the
// new CRD's schema (OpenAPI and CEL rules) of the version each object
// carries in its apiVersion, and returns an existingResources finding per
// invalid object. Objects whose version the new CRD lacks are skipped (the
// storedVersionRemoval/servedVersionRemoval checks cover that).
func ValidateExisting(newCRD *apiextv1.CustomResourceDefinition, objs []map[string]any, cfg *config.Settings) ([]Finding, error) {
	return validateExisting(newCRD, objs, cfg)
}

// Deletion returns the crdDeletion finding for deleting a CRD that still has
// count custom resources (none when count is 0 or the check is disabled).
func Deletion(crdName string, count int, cfg *config.Settings) []Finding {
	return deletion(crdName, count, "", cfg)
}

// Replacement returns the crdDeletion finding for an update that kapp
// carries out as a replace (it deletes the CRD and creates it again), which
// deletes the count custom resources the CRD still has; cause says why kapp
// replaces, e.g. "update strategy always-replace". None when count is 0 or
// the check is disabled.
func Replacement(crdName string, count int, cause string, cfg *config.Settings) []Finding {
	return deletion(crdName, count, cause, cfg)
}

// Dropped returns the crdDeletion finding for a CRD that the old inputs
// hold and the new ones lack, when no cluster is at hand to count its
// custom resources: deploying the new inputs with kapp deletes the CRD, and
// with it every custom resource it has (none when the check is disabled).
func Dropped(crdName string, cfg *config.Settings) []Finding {
	return dropped(crdName, cfg)
}

// HasErrors reports whether any finding has severity error.
func HasErrors(findings []Finding) bool {
	for _, f := range findings {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Bound keeps at most maxPerCRD findings per CRD (0 keeps all), in order,
// and returns how many were left out per CRD name.
func Bound(findings []Finding, maxPerCRD int) (kept []Finding, omitted map[string]int) {
	omitted = map[string]int{}
	if maxPerCRD <= 0 {
		return findings, omitted
	}
	seen := map[string]int{}
	for _, f := range findings {
		seen[f.CRD]++
		if seen[f.CRD] > maxPerCRD {
			omitted[f.CRD]++
			continue
		}
		kept = append(kept, f)
	}
	return kept, omitted
}
