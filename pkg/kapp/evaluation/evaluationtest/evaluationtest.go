// Package evaluationtest holds the Cluster that the unit tests of the
// callers of the evaluation service (the kapp preflight hook) share: it
// answers from memory and records what it was asked. The end-to-end tests
// use a real apiserver instead.
package evaluationtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// CRDsNamed is what GetCRDs returns on a cluster holding crds.
func CRDsNamed(crds map[string]*apiextv1.CustomResourceDefinition, names []string) map[string]*apiextv1.CustomResourceDefinition {
	out := map[string]*apiextv1.CustomResourceDefinition{}
	for _, n := range names {
		if c, ok := crds[n]; ok {
			out[n] = c
		}
	}
	return out
}

// Cluster records what the check asks of the cluster and answers from its
// fields.
type Cluster struct {
	mu   sync.Mutex
	CRDs map[string]*apiextv1.CustomResourceDefinition
	Objs []map[string]any
	// Dependents are the objects DependentsOf finds (of every kind, their
	// ownerReferences matched against what is asked), DependentsRead how
	// many objects it says it read, DependentsSkipped the resources it could
	// not read.
	Dependents        []Dependent
	DependentsRead    int
	DependentsSkipped []kube.Skipped
	Count             int
	Err               error
	Gets              [][]string
	Lists             []string
	Counts            []string
	// DependentsAsked records each DependentsOf: "apiVersions kind".
	DependentsAsked []string
	Contacts        int

	// DryRunErr answers dry runs by "verb name" ("update widgets.example.com").
	DryRunErr map[string]error
	// DryRunWarnings are warnings of every accepted create and update, as
	// admission webhooks give them, before the validation's own.
	DryRunWarnings []string
	DryRuns        []DryRun
	// Validates: the other dry runs of creates and updates are validated as
	// the apiserver validates them, with its own library (an update against
	// the CRD of that name in CRDs), and refused as it refuses them or
	// accepted with its warnings.
	Validates bool
	// Version is the apiserver's version ServerVersion answers; nil: 1.37.
	Version *version.Info
	// Migrations are the StorageVersionMigrations
	// ListStorageVersionMigrations answers; nil: not supported
	// (evaluation.Unsupported), as a cluster without the migrator.
	Migrations []unstructured.Unstructured
	// Services are the conversion webhooks ServiceProxy reaches, by
	// "namespace/name" of their Service (the path and port are not
	// checked); a Service not listed answers 503 as the apiserver's proxy
	// does for one without endpoints. nil: not supported
	// (evaluation.Unsupported), as a Cluster without the proxy.
	Services map[string]http.Handler
	// Proxied records each ServiceProxy: "namespace/name:port path".
	Proxied []string
}

// ServiceProxy reaches Services[namespace/name] in process, or
// ErrNotSupported when Services is nil.
func (f *Cluster) ServiceProxy(ctx context.Context, namespace, name string, port int32, path string) (kube.Poster, error) {
	if f.Services == nil {
		return evaluation.Unsupported{}.ServiceProxy(ctx, namespace, name, port, path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Proxied = append(f.Proxied, fmt.Sprintf("%s/%s:%d %s", namespace, name, port, path))
	return &handlerPoster{service: namespace + "/" + name, h: f.Services[namespace+"/"+name], path: path}, nil
}

// handlerPoster posts to a handler in process, as the service proxy would
// reach it.
type handlerPoster struct {
	service string
	h       http.Handler
	path    string
}

func (p *handlerPoster) Post(_ context.Context, body []byte) ([]byte, error) {
	if p.h == nil {
		return nil, &kube.ProxyError{Service: p.service, Code: http.StatusServiceUnavailable,
			Err: fmt.Errorf("no endpoints available for service %q", p.service)}
	}
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "https://proxy"+p.path, bytes.NewReader(body)))
	if rec.Code < 200 || rec.Code > 299 {
		return nil, &kube.ProxyError{Service: p.service, Code: rec.Code, Err: fmt.Errorf("status %d: %s", rec.Code, rec.Body.String())}
	}
	return rec.Body.Bytes(), nil
}

// ListStorageVersionMigrations answers Migrations, or ErrNotSupported when
// nil.
func (f *Cluster) ListStorageVersionMigrations(ctx context.Context) ([]unstructured.Unstructured, error) {
	if f.Migrations == nil {
		return evaluation.Unsupported{}.ListStorageVersionMigrations(ctx)
	}
	return f.Migrations, nil
}

// ServerVersion answers Version, or 1.37.
func (f *Cluster) ServerVersion(context.Context) (*version.Info, error) {
	if f.Version != nil {
		return f.Version, nil
	}
	return &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2"}, nil
}

var _ evaluation.Cluster = &Cluster{}
var _ evaluation.DependentsLister = &Cluster{}

// DryRun is one dry run the Cluster received.
type DryRun struct {
	Verb evaluation.Verb
	Obj  *unstructured.Unstructured
}

func (f *Cluster) DryRun(_ context.Context, verb evaluation.Verb, obj *unstructured.Unstructured) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.DryRuns = append(f.DryRuns, DryRun{Verb: verb, Obj: obj.DeepCopy()})
	if err := f.DryRunErr[string(verb)+" "+obj.GetName()]; err != nil || verb == evaluation.VerbDelete {
		return nil, err
	}
	if !f.Validates {
		return f.DryRunWarnings, nil
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	prepared := crdupgradesafety.PrepareCRD(crd)
	errs := prepared.Create(context.Background())
	warnings := prepared.WarningsOnCreate(context.Background())
	if verb == evaluation.VerbUpdate {
		old := crdupgradesafety.PrepareCRD(f.CRDs[crd.Name])
		errs = prepared.Update(context.Background(), old)
		warnings = prepared.WarningsOnUpdate(context.Background(), old)
	}
	if len(errs) == 0 {
		return append(append([]string(nil), f.DryRunWarnings...), warnings...), nil
	}
	return nil, apierrors.NewInvalid(schema.GroupKind{Group: apiextv1.GroupName, Kind: "CustomResourceDefinition"}, crd.Name, errs)
}

// DryRunVerbs returns "verb name" of every dry run, sorted.
func (f *Cluster) DryRunVerbs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []string{}
	for _, d := range f.DryRuns {
		out = append(out, string(d.Verb)+" "+d.Obj.GetName())
	}
	sort.Strings(out)
	return out
}

func (f *Cluster) GetCRDs(_ context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Gets = append(f.Gets, names)
	if f.Err != nil {
		return nil, f.Err
	}
	return CRDsNamed(f.CRDs, names), nil
}

func (f *Cluster) ListCustomResources(_ context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	fn func([]map[string]any) error) error {
	f.mu.Lock()
	f.Lists = append(f.Lists, crd.Name+" "+version)
	err := f.Err
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return fn(f.Objs)
}

// Dependent is an object with one ownerReference.
type Dependent struct {
	kube.Dependent
	OwnerKind string
}

// DependentsOf implements evaluation.DependentsLister.
func (f *Cluster) DependentsOf(_ context.Context, apiVersions []string, kind string, fn func(kube.Dependent)) (int, []kube.Skipped, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.DependentsAsked = append(f.DependentsAsked, strings.Join(apiVersions, ",")+" "+kind)
	if f.Err != nil {
		return 0, nil, f.Err
	}
	for _, d := range f.Dependents {
		if d.OwnerKind == kind && slices.Contains(apiVersions, d.OwnerAPIVersion) {
			fn(d.Dependent)
		}
	}
	return f.DependentsRead, f.DependentsSkipped, nil
}

func (f *Cluster) CountCustomResources(_ context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Counts = append(f.Counts, crd.Name)
	return f.Count, f.Err
}

// PolicyDenial is how the apiserver answers a request a
// ValidatingAdmissionPolicy denies without a reason of its own: 422 Invalid,
// the status kapp's fallback-on-replace falls back on.
func PolicyDenial(name string) error {
	msg := `customresourcedefinitions.apiextensions.k8s.io "` + name +
		`" is forbidden: ValidatingAdmissionPolicy 'freeze' with binding 'freeze' denied request: CRDs are frozen`
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid, Message: msg,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: msg}}},
	}}
}

// WebhookDenial is how the apiserver answers a request a validating
// webhook denies: 403 by default, no causes.
func WebhookDenial() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `admission webhook "crds.example.com" denied the request: not today`,
	}}
}

// Handlers are the conversion webhooks of Cluster.Services, by
// "namespace/name" of their Service.
func Handlers(hooks map[string]conversiontest.Hook) map[string]http.Handler {
	out := make(map[string]http.Handler, len(hooks))
	for k, h := range hooks {
		out[k] = &h
	}
	return out
}
