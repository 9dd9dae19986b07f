// Package objects reads stored objects as the apiserver will under the new
// CRD and tells what each finding of the checks does to them (their
// impact), and holds the live checks that read objects or their metadata:
// existingResources, crdDeletion, managedFields and ownerReferences, and
// conversionWebhook, which gathers the conversion probe's reports. Its
// readers take objects page by page; the evaluation service (or a test)
// hands them over.
//
// Files:
//
//	read.go            ObjectReader: one version's objects read under the old and the new CRD; VersionsToRead, NoObjectsRead, Unreadable
//	diff.go            what reading under the new CRD changes in an object (pruned, defaulted differently)
//	join.go            an object's effects attributed to the findings that explain them
//	paths.go           the schema path of a validation error's field
//	validator.go       a version's validator of stored objects (schema, CEL rules, metadata)
//	validators.go      Validators: the validators of recent batches kept, bounded in bytes
//	celsemantics.go    the CEL value semantics of the judged Kubernetes version (1.37's, or 1.35/1.36's: internal/celcompat)
//	reached_schema.go  the part of a schema the objects of a batch reach (what a validator is built for)
//	deletion.go        crdDeletion: Deletion and Dropped (a CRD deleted or replaced with its objects)
//	managedfields.go   managedFields: ManagedFieldsReader (server-side apply entries at removed versions; entries at
//	                   several versions under a conversion webhook change, up to 1.36)
//	ownerreferences.go ownerReferences: OwnerReferencesReader (dependents naming a removed version)
//	conversionwebhook.go conversionWebhook: ConversionReader (the conversion probe's reports of the objects, page by page), NeedsConversionProbe
//	conversionapplytime.go conversionWebhook: ConversionAtApplyTime (the new code ships in the same kapp deploy: judged at apply time)
package objects
