// Package evaluation is the evaluation service of the CRDUpgradeSafety check,
// shared by the kapp preflight hook (pkg/kapp/preflight), the tools commands
// (pkg/kapp/cmd/tools) and the admission webhook (pkg/kapp/webhook). It takes a Plan (the
// CRD creates, updates and deletes of one run), runs the engine
// (pkg/kapp/crdupgradesafety) over it and, where a Cluster is at hand, the
// live checks, and returns every finding, sorted.
//
// Files, one concept each:
//
//	plan.go               what one run checks: pairs, removals, kapp's update strategies
//	schedule.go           Evaluate: which work runs when, on how many cores and connections
//	offline.go            the checks of one pair that need no cluster
//	apiserver_rejects.go  the apiserverRejects check: the apiserver's validation, offline or as a server-side dry run
//	live.go               existingResources and crdDeletion: the checks that read the cluster
//	waivers.go            the waiver annotations of the plan's CRDs, as exemptions of the run
//	fetch.go              filling the old side of a plan from the live cluster
//	cluster.go            the Cluster interface (pkg/kapp/kube implements it with client-go)
//	deadline.go           liveChecksTimeout
//	progress.go           progress of long live checks
//	timing.go             KAPP_CRD_UPGRADE_SAFETY_TIMING: where the time goes
package evaluation
