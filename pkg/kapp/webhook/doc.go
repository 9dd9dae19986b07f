// Package webhook is the CRDUpgradeSafety check as a validating admission
// webhook: it judges CustomResourceDefinition UPDATE and DELETE requests
// of every client (kubectl, Helm, Flux, kapp-controller's stock kapp) with
// the evaluation service, the same settings and the same waiver
// annotations as the kapp preflight, and answers with a denial listing
// the error findings, or admission warnings.
//
// Files, one concept each:
//
//	review.go   Reviewer: an AdmissionRequest -> a plan -> findings -> an AdmissionResponse
//	handler.go  Handler: the HTTP side (bounded body, the apiserver's timeout, probes, review slots)
//	tls.go      CertReloader: the serving certificate, reloaded when its files change
//	server.go   Server: TLS only, graceful shutdown
//
// The command is `kapp tools crd-upgrade-safety-webhook`
// (pkg/kapp/cmd/tools); its install manifests are in examples/webhook and
// docs/webhook.md explains them.
package webhook
