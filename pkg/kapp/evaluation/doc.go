// Package evaluation is the evaluation service of the CRDUpgradeSafety check,
// shared by the kapp preflight hook (pkg/kapp/preflight), the tools commands
// (pkg/kapp/cmd/tools) and the admission webhook (pkg/kapp/webhook). Each
// of them turns its input into a Request and calls Run: a Plan (the CRD
// creates, updates and deletes of one run), over which Run runs the engine
// (pkg/kapp/crdupgradesafety) and, where a Cluster is at hand, the live
// checks, and returns every finding, sorted; Result.Err makes error
// findings one error type, *UnsafeUpgradeError.
//
// Files, one concept each:
//
//	run.go                Run: the deadline, the cluster if needed, the old side from the cluster, progress, Evaluate
//	unsafe.go             UnsafeUpgradeError and ErrUnsafeUpgrade: the error of a run with error findings, as facts (report words it)
//	plan.go               what one run checks: pairs, removals, kapp's update strategies
//	schedule.go           Evaluate: which work runs when, on how many cores and connections
//	offline.go            the checks of one pair that need no cluster
//	apiserver_rejects.go  the apiserverRejects check: the apiserver's validation, offline or as a server-side dry run
//	live.go               existingResources and crdDeletion: the checks that read the cluster
//	conversion.go         conversionWebhook: the stored objects (or --objects samples) through the new conversion webhook
//	applytime.go          the apply-time mark of a kapp deploy's dry run for the admission webhook (ApplyTimeAnnotation)
//	waivers.go            the waiver annotations of the plan's CRDs as waivers of the run; stale waivers
//	fetch.go              filling the old side of a plan from the live cluster
//	cluster.go            the Cluster interface (pkg/kapp/kube implements it with client-go)
//	deadline.go           liveChecksTimeout
//	progress.go           progress of long live checks
//	timing.go             KAPP_CRD_UPGRADE_SAFETY_TIMING: where the time of an evaluation goes
//	checktiming.go        KAPP_CRD_UPGRADE_SAFETY_TIMING: a front-end's whole run (wall time, bytes, collections)
package evaluation
