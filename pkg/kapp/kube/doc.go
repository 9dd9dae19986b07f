// Package kube is the client-go adapter that the evaluation service
// (pkg/kapp/evaluation), the admission webhook (pkg/kapp/webhook) and the
// storage migration (pkg/kapp/migration) share: one Client over a dynamic
// client, a REST client and a discovery client. It knows nothing of kapp's
// command line: the front-ends (the preflight registry, the tools
// commands) build the clients from kapp's dependencies and pass them to New.
//
// Files, one concept each:
//
//	client.go     Client: concurrent CRD GETs, paged LISTs of custom resources, counts, server-side dry runs
//	resources.go  single objects: the live CRD and its status, custom resources, StorageVersionMigrations
//	discovery.go  API discovery: storage version hashes, whether the cluster serves StorageVersionMigrations
//	admissionwebhook.go  CRDAdmissionWebhook: the registration of crd-upgrade-safety's admission webhook for CRD updates
package kube
