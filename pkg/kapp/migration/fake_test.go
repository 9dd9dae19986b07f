package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
)

// fakeMigrationCluster is a small in-memory Cluster for the unit
// tests: it keeps, per object, the version it is "stored" at and behaves
// like the apiserver on the points the migration relies on (an update of
// an object already stored at the version it is written at changes
// nothing, a stale resourceVersion is a conflict). The e2e tests run the
// real thing.
type fakeMigrationCluster struct {
	mu      sync.Mutex
	crds    map[string]*unstructured.Unstructured
	objects map[string]*fakeObject // "namespace/name"
	rv      int

	// behaviour
	conflicts    map[string]int   // object -> conflicts to answer before accepting
	failUpdates  map[string]error // object -> error every update returns
	failResource string           // when set, failUpdates apply to this resource only
	deleteFirst  map[string]bool  // object -> deleted just before its first update
	expireOnce   bool             // the first LIST with a continue token answers 410
	hashes       []string         // StorageVersionHash answers in turn, the last repeats
	crdUpdates   []string         // CRDs whose metadata UpdateCRD wrote (the record)
	statusConf   int              // conflicts UpdateCRDStatus answers before accepting
	afterList    func()           // runs after every LIST (changes during a run)
	// The cluster's storage version migrator (storagemigration.k8s.io/v1):
	// served when servesSVM; a migration succeeds on its svmPolls-th read
	// (rewriting every object and, unless svmNoTrim, trimming the CRD's
	// status.storedVersions, as kube-controller-manager does), or fails
	// with svmFail.
	servesSVM  bool
	version    string // the apiserver's gitVersion; "": v1.37.3
	versionErr error  // ServerVersion's error
	svmPolls   int
	svmFail    string
	svmFailN   int // with svmFail: only the first svmFailN migrations fail (0: all)
	svmNoTrim  bool
	// svmTrimOnFail: a failed migration trims status.storedVersions to its
	// last version, as Kubernetes 1.37.0-1.37.2 do.
	svmTrimOnFail bool
	svms          map[string]*unstructured.Unstructured
	svmReads      map[string]int
	svmsMade      []string // names created
	svmsGone      []string // names deleted

	// records
	writes        int      // object writes that changed what is stored
	statusUpdates []string // CRD names whose status was written
	lists         []string // continue tokens of the LISTs
	gets          int      // object GETs
}

type fakeObject struct {
	u        *unstructured.Unstructured
	storedAt string
}

func newFakeMigrationCluster(crds ...*unstructured.Unstructured) *fakeMigrationCluster {
	f := &fakeMigrationCluster{crds: map[string]*unstructured.Unstructured{}, objects: map[string]*fakeObject{},
		conflicts: map[string]int{}, failUpdates: map[string]error{}, deleteFirst: map[string]bool{}, rv: 100}
	for _, c := range crds {
		f.crds[c.GetName()] = c
	}
	return f
}

// addObjects adds n objects obj-000... in namespace ns, stored at version.
func (f *fakeMigrationCluster) addObjects(ns string, n int, version string) {
	for i := 0; i < n; i++ {
		f.rv++
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/" + version, "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("obj-%03d", i), "namespace": ns,
				"resourceVersion": strconv.Itoa(f.rv)},
		}}
		f.objects[objectName(ns, u.GetName())] = &fakeObject{u: u, storedAt: version}
	}
}

func (f *fakeMigrationCluster) storedAt() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]int{}
	for _, o := range f.objects {
		m[o.storedAt]++
	}
	return m
}

var widgetsGR = schema.GroupResource{Group: "example.com", Resource: "widgets"}

func (f *fakeMigrationCluster) GetCRD(_ context.Context, name string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.crds[name]
	if !ok {
		return nil, apierrors.NewNotFound(apiextv1.Resource("customresourcedefinitions"), name)
	}
	return c.DeepCopy(), nil
}

func (f *fakeMigrationCluster) UpdateCRDStatus(_ context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	live := f.crds[crd.GetName()]
	if f.statusConf > 0 {
		f.statusConf--
		live.SetResourceVersion(live.GetResourceVersion() + "x") // someone else wrote it
	}
	if live.GetResourceVersion() != crd.GetResourceVersion() {
		return nil, apierrors.NewConflict(apiextv1.Resource("customresourcedefinitions"), crd.GetName(), fmt.Errorf("stale"))
	}
	stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	_ = unstructured.SetNestedStringSlice(live.Object, stored, "status", "storedVersions")
	live.SetResourceVersion(live.GetResourceVersion() + "s")
	f.statusUpdates = append(f.statusUpdates, crd.GetName())
	return live.DeepCopy(), nil
}

func (f *fakeMigrationCluster) UpdateCRD(_ context.Context, crd *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	live := f.crds[crd.GetName()]
	if live.GetResourceVersion() != crd.GetResourceVersion() {
		return nil, apierrors.NewConflict(apiextv1.Resource("customresourcedefinitions"), crd.GetName(), fmt.Errorf("stale"))
	}
	live.SetAnnotations(crd.GetAnnotations())
	live.SetResourceVersion(live.GetResourceVersion() + "m")
	f.crdUpdates = append(f.crdUpdates, crd.GetName())
	return live.DeepCopy(), nil
}

func (f *fakeMigrationCluster) StorageVersionHash(context.Context, schema.GroupVersionResource) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.hashes) == 0 {
		return "", nil
	}
	h := f.hashes[0]
	if len(f.hashes) > 1 {
		f.hashes = f.hashes[1:]
	}
	return h, nil
}

func (f *fakeMigrationCluster) CountCustomResources(context.Context, *apiextv1.CustomResourceDefinition) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.objects), nil
}

func (f *fakeMigrationCluster) ServesStorageMigration(context.Context) (bool, error) {
	return f.servesSVM, nil
}

// ServerVersion answers version, or v1.37.3 (whose migrator is used).
func (f *fakeMigrationCluster) ServerVersion(context.Context) (*version.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.versionErr != nil {
		return nil, f.versionErr
	}
	if f.version != "" {
		return &version.Info{GitVersion: f.version}, nil
	}
	return &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.3"}, nil
}

func (f *fakeMigrationCluster) Migrations() MigrationClient { return fakeMigrations{f} }

// ServiceProxy: the fake reaches no Service (conversion webhooks of the
// tests are URLs).
func (f *fakeMigrationCluster) ServiceProxy(context.Context, string, string, int32, string) (kube.Poster, error) {
	return nil, errors.New("the fake cluster reaches no service")
}

type fakeMigrations struct{ f *fakeMigrationCluster }

func (m fakeMigrations) Create(_ context.Context, svm *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f := m.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.svms == nil {
		f.svms, f.svmReads = map[string]*unstructured.Unstructured{}, map[string]int{}
	}
	c := svm.DeepCopy()
	c.SetName(c.GetGenerateName() + strconv.Itoa(len(f.svmsMade)))
	f.svms[c.GetName()] = c
	f.svmsMade = append(f.svmsMade, c.GetName())
	return c.DeepCopy(), nil
}

func (m fakeMigrations) Get(_ context.Context, name string) (*unstructured.Unstructured, error) {
	f := m.f
	f.mu.Lock()
	defer f.mu.Unlock()
	svm, ok := f.svms[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: svmResource.Group, Resource: svmResource.Resource}, name)
	}
	f.svmReads[name]++
	cond := func(typ, reason, msg string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg}
	}
	switch {
	case f.svmReads[name] < f.svmPolls:
		_ = unstructured.SetNestedSlice(svm.Object, []any{cond("Running", "MigrationRunning", "migrating")}, "status", "conditions")
	case f.svmFail != "" && (f.svmFailN == 0 || slices.Index(f.svmsMade, name) < f.svmFailN):
		_ = unstructured.SetNestedSlice(svm.Object, []any{cond("Failed", "StorageVersionMigrationFailed", f.svmFail)}, "status", "conditions")
		if f.svmTrimOnFail { // kubernetes/kubernetes#143103
			for _, crd := range f.crds {
				stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
				_ = unstructured.SetNestedStringSlice(crd.Object, stored[len(stored)-1:], "status", "storedVersions")
			}
		}
	default:
		_ = unstructured.SetNestedSlice(svm.Object, []any{cond("Succeeded", "StorageVersionMigrationSucceeded", "Migration completed")}, "status", "conditions")
		group, _, _ := unstructured.NestedString(svm.Object, "spec", "resource", "group")
		resource, _, _ := unstructured.NestedString(svm.Object, "spec", "resource", "resource")
		for _, crd := range f.crds {
			g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			r, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
			if g != group || r != resource {
				continue
			}
			storage := ""
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			for _, v := range versions {
				if vm := v.(map[string]any); vm["storage"] == true {
					storage = vm["name"].(string)
				}
			}
			for _, o := range f.objects {
				o.storedAt = storage
			}
			if !f.svmNoTrim {
				_ = unstructured.SetNestedStringSlice(crd.Object, []string{storage}, "status", "storedVersions")
			}
		}
	}
	return svm.DeepCopy(), nil
}

func (m fakeMigrations) Delete(_ context.Context, name string) error {
	f := m.f
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.svms, name)
	f.svmsGone = append(f.svmsGone, name)
	return nil
}

func (f *fakeMigrationCluster) Objects(gvr schema.GroupVersionResource) ObjectClient {
	return fakeObjects{f: f, version: gvr.Version, resource: gvr.Resource}
}

type fakeObjects struct {
	f        *fakeMigrationCluster
	version  string
	resource string
}

// List pages through the objects sorted by key; the continue token is the
// key to start at.
func (o fakeObjects) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	f := o.f
	defer func() {
		if f.afterList != nil {
			f.afterList()
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, opts.Continue)
	if opts.Continue != "" && f.expireOnce {
		f.expireOnce = false
		err := apierrors.NewResourceExpired("continue token expired")
		err.ErrStatus.ListMeta.Continue = opts.Continue
		return nil, err
	}
	keys := make([]string, 0, len(f.objects))
	for k := range f.objects {
		if k >= opts.Continue {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	list := &unstructured.UnstructuredList{}
	for i, k := range keys {
		if opts.Limit > 0 && int64(i) == opts.Limit {
			list.SetContinue(k)
			break
		}
		u := f.objects[k].u.DeepCopy()
		u.SetAPIVersion("example.com/" + o.version) // read at the version listed
		list.Items = append(list.Items, *u)
	}
	return list, nil
}

func (o fakeObjects) Get(_ context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	f := o.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	obj, ok := f.objects[objectName(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(widgetsGR, name)
	}
	return obj.u.DeepCopy(), nil
}

func (o fakeObjects) Update(_ context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f := o.f
	f.mu.Lock()
	defer f.mu.Unlock()
	key := objectName(u.GetNamespace(), u.GetName())
	if f.deleteFirst[key] {
		delete(f.deleteFirst, key)
		delete(f.objects, key)
	}
	if err := f.failUpdates[key]; err != nil && (f.failResource == "" || f.failResource == o.resource) {
		return nil, err
	}
	obj, ok := f.objects[key]
	if !ok {
		return nil, apierrors.NewNotFound(widgetsGR, u.GetName())
	}
	if f.conflicts[key] > 0 {
		f.conflicts[key]--
		f.rv++ // a concurrent writer (at the storage version)
		obj.u.SetResourceVersion(strconv.Itoa(f.rv))
		obj.storedAt = o.version
	}
	if obj.u.GetResourceVersion() != u.GetResourceVersion() {
		return nil, apierrors.NewConflict(widgetsGR, u.GetName(), fmt.Errorf("the object has been modified"))
	}
	// The apiserver takes the managedFields of an update as they are,
	// unless it has none (then it keeps the live ones).
	newMF, hasMF, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
	liveMF, _, _ := unstructured.NestedFieldNoCopy(obj.u.Object, "metadata", "managedFields")
	mfChanged := hasMF && !jsonEqual(newMF, liveMF)
	if obj.storedAt != o.version || mfChanged { // the encoded bytes differ: a write
		f.rv++
		obj.u.SetResourceVersion(strconv.Itoa(f.rv))
		obj.storedAt = o.version
		if mfChanged {
			obj.u.SetManagedFields(u.GetManagedFields())
		}
		f.writes++
	}
	return obj.u.DeepCopy(), nil
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// setManagers sets the managedFields of the object key.
func (f *fakeMigrationCluster) setManagers(key string, entries ...metav1.ManagedFieldsEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[key].u.SetManagedFields(entries)
}

// managers returns the managedFields of the object key.
func (f *fakeMigrationCluster) managers(key string) []metav1.ManagedFieldsEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objects[key].u.GetManagedFields()
}

// mfEntry is a managedFields entry of manager at example.com/version.
func mfEntry(manager string, op metav1.ManagedFieldsOperationType, version, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "example.com/" + version,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

// ---------------------------------------------------------------- CRDs

type fakeVersion struct {
	name            string
	served, storage bool
}

// fakeCRD returns a live widgets.example.com CRD, established.
func fakeCRD(stored []string, versions ...fakeVersion) *unstructured.Unstructured {
	crd := &apiextv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", UID: types.UID("uid-1"), Generation: 3,
			ResourceVersion: "7"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		},
		Status: apiextv1.CustomResourceDefinitionStatus{
			StoredVersions: stored,
			Conditions: []apiextv1.CustomResourceDefinitionCondition{
				{Type: apiextv1.Established, Status: apiextv1.ConditionTrue},
			},
		},
	}
	for _, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{
			Name: v.name, Served: v.served, Storage: v.storage,
			Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object"}},
		})
	}
	return toUnstructured(crd)
}

func toUnstructured(crd *apiextv1.CustomResourceDefinition) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// renamed returns crd as plural.example.com.
func renamed(crd *unstructured.Unstructured, plural string) *unstructured.Unstructured {
	c := crd.DeepCopy()
	c.SetName(plural + ".example.com")
	_ = unstructured.SetNestedField(c.Object, plural, "spec", "names", "plural")
	return c
}
