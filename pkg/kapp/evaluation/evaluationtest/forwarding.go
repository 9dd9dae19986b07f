package evaluationtest

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"
)

// Recorder is a Cluster with every capability that records which of its
// methods were called and answers each with nothing (no error).
type Recorder struct {
	mu     sync.Mutex
	called map[string]bool
}

var _ evaluation.Cluster = &Recorder{}

func (r *Recorder) record(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.called == nil {
		r.called = map[string]bool{}
	}
	r.called[method] = true
}

// Called lists the methods called, sorted.
func (r *Recorder) Called() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.called))
	for m := range r.called {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func (r *Recorder) GetCRDs(context.Context, []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	r.record("GetCRDs")
	return map[string]*apiextv1.CustomResourceDefinition{}, nil
}

func (r *Recorder) ListCustomResources(context.Context, *apiextv1.CustomResourceDefinition, string, func([]map[string]any) error) error {
	r.record("ListCustomResources")
	return nil
}

func (r *Recorder) CountCustomResources(context.Context, *apiextv1.CustomResourceDefinition) (int, error) {
	r.record("CountCustomResources")
	return 0, nil
}

func (r *Recorder) DryRun(context.Context, evaluation.Verb, *unstructured.Unstructured) ([]string, error) {
	r.record("DryRun")
	return nil, nil
}

func (r *Recorder) ServerVersion(context.Context) (*version.Info, error) {
	r.record("ServerVersion")
	return &version.Info{Major: "1", Minor: "37"}, nil
}

func (r *Recorder) DependentsOf(context.Context, []string, string, func(kube.Dependent)) (int, []kube.Skipped, error) {
	r.record("DependentsOf")
	return 0, nil, nil
}

func (r *Recorder) ListStorageVersionMigrations(context.Context) ([]unstructured.Unstructured, error) {
	r.record("ListStorageVersionMigrations")
	return nil, nil
}

func (r *Recorder) ServiceProxy(context.Context, string, string, int32, string) (kube.Poster, error) {
	r.record("ServiceProxy")
	return nil, nil
}

// RequireForwardsEveryMethod calls every method of evaluation.Cluster (its
// optional capabilities included) on decorate(a Recorder) and requires
// each call to reach the Recorder with no error: a decorator that answers
// a method itself (a capability hidden, ErrNotSupported) fails. Arguments
// are zero values, a background context, an empty CRD and no-op callbacks.
func RequireForwardsEveryMethod(t Errorer, decorate func(evaluation.Cluster) evaluation.Cluster) {
	t.Helper()
	iface := reflect.TypeFor[evaluation.Cluster]()
	rec := &Recorder{}
	decorated := reflect.ValueOf(decorate(rec))
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		fn := decorated.MethodByName(m.Name)
		if !fn.IsValid() {
			t.Errorf("the decorator has no method %s", m.Name)
			continue
		}
		args := make([]reflect.Value, fn.Type().NumIn())
		for j := range args {
			args[j] = argument(fn.Type().In(j))
		}
		out := fn.Call(args)
		if last := out[len(out)-1]; !last.IsNil() {
			t.Errorf("%s through the decorator: %v", m.Name, last.Interface())
		}
		if !slices.Contains(rec.Called(), m.Name) {
			t.Errorf("%s through the decorator did not reach the cluster it wraps (a capability hidden)", m.Name)
		}
	}
}

// Errorer is the part of a *testing.T that RequireForwardsEveryMethod
// reports to.
type Errorer interface {
	Helper()
	Errorf(format string, args ...any)
}

var _ Errorer = (*testing.T)(nil)

// argument is a value of type t to call a Cluster method with.
func argument(t reflect.Type) reflect.Value {
	switch {
	case t == reflect.TypeFor[context.Context]():
		return reflect.ValueOf(context.Background())
	case t == reflect.TypeFor[*apiextv1.CustomResourceDefinition]():
		return reflect.ValueOf(&apiextv1.CustomResourceDefinition{})
	case t == reflect.TypeFor[*unstructured.Unstructured]():
		return reflect.ValueOf(&unstructured.Unstructured{Object: map[string]any{}})
	case t.Kind() == reflect.Func:
		return reflect.MakeFunc(t, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, t.NumOut())
			for i := range out {
				out[i] = reflect.Zero(t.Out(i))
			}
			return out
		})
	}
	return reflect.Zero(t)
}
