// Package crdupgradesafety is the comparison engine of the CRDUpgradeSafety
// check. It compares an old and a new CustomResourceDefinition and returns
// findings. It knows nothing of kapp or of the cluster: callers hand it CRD
// pairs (and, for live checks, the existing custom resources).
//
// Its exported face: Compare (the comparison of an update), ValidateExisting
// (existingResources), Deletion and Dropped (crdDeletion), PrepareCRD,
// ValidateCRD, Rejected and InvalidOld (the apiserver's own validation, for
// apiserverRejects), and the findings with SortFindings, Bound and
// HasErrors. Every function that takes a *config.Settings reads nil as
// config.Default().
package crdupgradesafety

import "sort"

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
	// DataLoss: the change loses stored data (pruned fields, a CRD deleted
	// or replaced, a stored version removed); the message starts with
	// "data loss".
	DataLoss bool `json:"dataLoss,omitempty"`
	// Impact: what the finding does to the stored objects read (a cluster,
	// or samples); nil when none were read.
	Impact *Impact `json:"impact,omitempty"`
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

// SortFindings sorts findings that lose stored data first, then by CRD,
// version, field, check, message and severity: the one stable order of
// every output, for one CRD or combined results of several CRDs and of the
// live checks.
func SortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		switch {
		case a.DataLoss != b.DataLoss:
			return a.DataLoss
		case a.CRD != b.CRD:
			return a.CRD < b.CRD
		case a.Version != b.Version:
			return a.Version < b.Version
		case a.Field != b.Field:
			return a.Field < b.Field
		case a.Check != b.Check:
			return a.Check < b.Check
		case a.Message != b.Message:
			return a.Message < b.Message
		default:
			return a.Severity < b.Severity
		}
	})
}
