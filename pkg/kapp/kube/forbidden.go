package kube

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ForbiddenError is the error of a read the client's identity may not make:
// the apiserver answered 403 Forbidden (apierrors.IsForbidden) to Verb on
// Resource of Group. It names the RBAC rule that would allow it; the
// webhook's answer composes it into English (pkg/kapp/report). It unwraps
// to the apiserver's error.
type ForbiddenError struct {
	Group    string // "" for the core group
	Resource string // plural: "widgets"
	Verb     string // "list", "get"
	Err      error
}

// Error is the apiserver's error: it names the user, the verb and the
// resource already.
func (e *ForbiddenError) Error() string { return e.Err.Error() }

func (e *ForbiddenError) Unwrap() error { return e.Err }

// forbidden wraps err in a *ForbiddenError when the apiserver refused verb
// on gvr with 403 Forbidden; it returns any other error as it is.
func forbidden(err error, gvr schema.GroupVersionResource, verb string) error {
	if err == nil || !apierrors.IsForbidden(err) {
		return err
	}
	return &ForbiddenError{Group: gvr.Group, Resource: gvr.Resource, Verb: verb, Err: err}
}
