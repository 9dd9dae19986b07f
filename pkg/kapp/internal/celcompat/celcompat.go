// Package celcompat evaluates the CEL rules of a CRD (x-kubernetes-validations)
// on objects with the value semantics of the Kubernetes version that judges
// them. The library linked into kapp is 1.37's; Kubernetes 1.37 changed ==
// and + on lists of x-kubernetes-list-type set and map (kubernetes#140293:
// equality counts duplicates, + merges by key), so a cluster at 1.35 or 1.36
// can accept an object that 1.37's rules refuse, or the reverse. For those
// clusters the rules run with values_v135.go, a copy of the values of
// k8s.io/apiserver v0.35.0.
package celcompat

import "k8s.io/apiserver/pkg/cel/common"

// Schema is the schema the values are typed by (a structural schema wrapped
// by k8s.io/apiextensions-apiserver's model.Structural).
type Schema = common.Schema
