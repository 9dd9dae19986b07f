// Package conversion probes a CRD's conversion webhook the way the
// apiserver calls it (k8s.io/apiextensions-apiserver/pkg/apiserver/conversion,
// webhook_converter.go), before the stored objects depend on it.
//
// It is a layer beside pkg/kapp/kube: it talks to a webhook and knows
// nothing of the engine, the evaluation service or kapp. Its findings are
// facts (a Report of per-object results); the English is composed by the
// caller.
//
// Files, one concept each:
//
//	transport.go  where reviews go: a URL with a CA bundle and TLS server name, or any RoundTripper
//	convert.go    one conversion as the apiserver runs it: the review, the response checks, restoreObjectMeta
//	schema.go     pruning and defaulting by a version's structural schema (the apiserver's own code)
//	probe.go      Probe: the round trips of every object, budgets, the Report
//	diff.go       the field paths a round trip lost
package conversion
