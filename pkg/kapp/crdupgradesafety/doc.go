// Package crdupgradesafety is the comparison engine of the CRDUpgradeSafety
// check, in rooms by sub-system: the finding model and policy (finding),
// the schema and CRD checks (checks), the stored-object readers and the
// live checks that read objects (objects), and the apiserver's validation
// of a CRD (apivalidation). It knows nothing of kapp or of the cluster:
// callers hand it CRD pairs and, where they have them, stored objects.
// This package is its front: the entry points callers use.
//
// Files:
//
//	engine.go       Judge: one call per pair (compare, read a source of stored objects, judge); Pair, Objects; Compare
//	descriptors.go  every room's check descriptors loaded (finding.Descriptor)
package crdupgradesafety
