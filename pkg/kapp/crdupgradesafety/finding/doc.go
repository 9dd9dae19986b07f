// Package finding is the engine's finding model: what a check found, as
// facts (Finding, Change, Impact, Remedy), and the policy that turns a
// check's Draft into a judged Finding (mode, per-check enforcement,
// alphaVersionEnforcement, waivers, acceptDataLoss) with its stable
// fingerprint. The checks (package checks), the stored-object readers
// (package objects) and the apiserver wrapper (package apivalidation) all
// make their findings here; the outputs (pkg/kapp/report) compose their
// English from these facts. Every function that takes a *config.Settings
// reads nil as config.Default().
//
// Files:
//
//	findings.go    Finding, Severity, Cause, ObjectFinding; HasErrors, Bound, SortFindings, StaleWaivers
//	descriptor.go  Descriptor: what a check is, declared in its own file (Register): IDs, how it runs, remedy, data loss, unaffectedEnforcement
//	policy.go      Draft and Policy: a check's change made a finding (severity, waivers, acceptances); KeyFindings
//	alpha.go       IsAlphaVersion and alphaVersionEnforcement's leniency
//	fingerprint.go Change (a finding's facts) and the fingerprint that hashes them
//	remedy.go      Remedy, its actions and each check's default one; AcceptHint
//	impact.go      Impact, Effect, ObjectEffect: what a finding does to the stored objects read; WithoutStoredValues
//	apply.go       VersionImpact and ApplyImpacts: a reader's impact joined to the findings and judged again
//	values.go      JSON values: canonical form, rendering, bounds on what a finding carries
//	baseline.go    Baseline: the git commit an old CRD was read at
//	ordering.go    ConversionOrdering: a conversion webhook's workloads in a kapp change set (conversionOrdering)
package finding
