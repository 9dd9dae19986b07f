// Package crdupgradesafety is the comparison engine of the CRDUpgradeSafety
// check, in rooms by sub-system: the finding model and policy (finding),
// the schema and CRD checks (checks), the stored-object readers and the
// live checks that read objects (objects), and the apiserver's validation
// of a CRD (apivalidation). It knows nothing of kapp or of the cluster:
// callers hand it CRD pairs and, where they have them, sources of stored
// objects it defines (Objects, Lister, Dependents) that they adapt a
// cluster or files to. This package is its front: the entry points callers
// use; no package outside the engine imports a room but this one and
// finding (TestEngineFront).
//
// Files:
//
//	engine.go       Judge: one call per pair (compare, the live views, read a source of stored objects, judge once
//	                in the pair's one policy); Pair, Objects; Compare
//	live.go         the live views, steps of Judge: Deletion (a replace's or removal's count), managedFields
//	                (Lister), the conversion probe (ConversionProber: the caller reaches the webhook, the engine
//	                judges what it gathered, or the apply-time verdict: ConversionResult), ownerReferences
//	                (Dependents); conversionOrdering and a status write's trim run from Judge
//	apiserver.go    what the service needs of the other rooms, through the front: the apiserver's validation
//	                (apiserverRejects: PrepareCRD, Rejected, ...) and the validators kept across pairs
//	descriptors.go  every room's check descriptors loaded (finding.Descriptor)
package crdupgradesafety
