// Package tools holds our `kapp tools` commands, in kapp's shape
// (carvel.dev/kapp/pkg/kapp/cmd/app): each command's flags in its
// _flags.go file (a struct per concern, each with its Set), its Options,
// NewCmd with the help text, and a thin Run that calls named steps; the
// work is done by the packages below (evaluation, inputs, report,
// migration, webhook).
//
// Files, by command:
//
//	crd_upgrade_safety.go                     kapp tools crd-upgrade-safety: Options, help, Run, compare (each old side in turn)
//	crd_upgrade_safety_flags.go               its flags: inputs (--file, --file2, --git-ref, --objects), outputs, --kube-version
//	crd_upgrade_safety_inputs.go              input assembly: file flags checked, inputs loaded, kapp Config, one request per old side
//	crd_upgrade_safety_objects.go             --objects: sample custom resources given to their CRD's pair
//	crd_upgrade_safety_output.go              output selection: --output, --output-file, the reports printed
//	crd_upgrade_safety_exit.go                exit statuses: 3 for an error finding, 1 for any other error
//	crd_upgrade_safety_gc.go                  the garbage collector tuned to the size of the inputs
//	crd_upgrade_safety_webhook.go             kapp tools crd-upgrade-safety-webhook: Options, help, Run, the server assembled
//	crd_upgrade_safety_webhook_flags.go       its serving flags and their checks
//	crd_upgrade_safety_webhook_rbac.go        kapp tools crd-upgrade-safety-webhook rbac: the role to list custom resources
//	crd_upgrade_safety_webhook_rbac_flags.go  its flags
//	crd_migrate_storage.go                    kapp tools crd-migrate-storage: Options, help, Run, the CRDs named
//	crd_migrate_storage_flags.go              its flags: the CRDs, the migration's shape
//	crd_migrate_storage_output.go             the migration's UI: plan table, preview lines, confirmation, dropped entries
package tools
