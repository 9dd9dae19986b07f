// Package apivalidation is the apiserver's own validation of a CRD, for
// the apiserverRejects check: PrepareCRD and ValidateCRD run the
// apiextensions-apiserver's strategy on a create or an update (offline),
// Rejected, Warned and InvalidOld turn what the apiserver (or a server-side
// dry run) said into findings.
//
// Files:
//
//	apivalidation.go  PrepareCRD, ValidateCRD, Rejection(s), Rejected, Warned, InvalidOld, V1FieldPath
package apivalidation
