package conversion

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// hook is a conversion webhook for the widgets of testdata/widgets.yaml:
// v1's spec.name is spec.title at v2 and v3. Each field turns on one way
// of being wrong.
type hook struct {
	lossy      bool // drops spec.color on the way to v2
	hubOnly    bool // converts only to and from v2, the hub
	failLabel  bool // refuses objects labelled fail=yes
	wrongUID   bool
	dropOne    bool // answers one object less than sent
	rename     bool // changes the first object's name
	keep       bool // answers the objects at the version they came at
	wrongKind  bool
	noTypeMeta bool // answers without apiVersion and kind
	noMeta     bool // drops metadata from converted objects
	intAnno    bool // answers an annotation whose value is a number
	badLabel   bool // adds a label the apiserver refuses
	changeUID  bool // changes the objects' uid
	addLabel   bool // adds a valid label (kept) and changes generation (restored)
	// stash adds an annotation of this many bytes on the way to v2
	stash int
	// httpStatus answers with this status
	httpStatus int
	// typed drops the spec fields the target version's Go type lacks, as
	// a webhook decoding into typed structs does
	typed bool
	// oneAtATime refuses reviews of more than one object
	oneAtATime bool
	// delay before each answer
	delay time.Duration
}

func (h *hook) convert(obj map[string]any, to string) (map[string]any, error) {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	from := strings.TrimPrefix(u.GetAPIVersion(), "example.com/")
	if h.failLabel && u.GetLabels()["fail"] == "yes" {
		return nil, fmt.Errorf("cannot unmarshal spec.size of %s", u.GetName())
	}
	if h.hubOnly && from != "v2" && to != "v2" {
		return nil, fmt.Errorf("no conversion from %s to %s", from, to)
	}
	spec, _ := u.Object["spec"].(map[string]any)
	if spec != nil {
		switch {
		case from == "v1" && to != "v1":
			if n, ok := spec["name"]; ok {
				spec["title"] = n
				delete(spec, "name")
			}
		case from != "v1" && to == "v1":
			if n, ok := spec["title"]; ok {
				spec["name"] = n
				delete(spec, "title")
			}
		}
		if h.typed {
			known := map[string]bool{"size": true, "color": true, "title": to != "v1", "name": to == "v1", "shape": to == "v3"}
			for k := range spec {
				if !known[k] {
					delete(spec, k)
				}
			}
		}
		if h.lossy && to == "v2" {
			delete(spec, "color")
		}
	}
	if h.stash > 0 && to == "v2" {
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a["example.com/stash"] = strings.Repeat("x", h.stash)
		u.SetAnnotations(a)
	}
	if !h.keep {
		u.SetAPIVersion("example.com/" + to)
	}
	if h.wrongKind {
		u.SetKind("Gadget")
	}
	if h.changeUID {
		u.SetUID("other")
	}
	if h.badLabel {
		u.SetLabels(map[string]string{"bad label": "x"})
	}
	if h.addLabel {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["converted"] = to
		u.SetLabels(l)
		u.SetGeneration(99)
	}
	if h.noMeta {
		delete(u.Object, "metadata")
	}
	if h.intAnno {
		_ = unstructured.SetNestedField(u.Object, int64(1), "metadata", "annotations", "n")
	}
	return u.Object, nil
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.httpStatus != 0 {
		http.Error(w, "unavailable", h.httpStatus)
		return
	}
	var review apiextv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := review.Request
	if h.delay > 0 {
		time.Sleep(h.delay)
	}
	to := strings.TrimPrefix(req.DesiredAPIVersion, "example.com/")
	resp := &apiextv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	if h.wrongUID {
		resp.UID = "not-the-request"
	}
	if h.oneAtATime && len(req.Objects) > 1 {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "one object at a time"}
		req.Objects = nil
	}
	for i, raw := range req.Objects {
		var obj map[string]any
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := h.convert(obj, to)
		if err != nil {
			resp.ConvertedObjects = nil
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		if h.rename && i == 0 {
			(&unstructured.Unstructured{Object: out}).SetName("renamed")
		}
		b, _ := json.Marshal(out)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
	}
	if h.dropOne && len(resp.ConvertedObjects) > 0 {
		resp.ConvertedObjects = resp.ConvertedObjects[:len(resp.ConvertedObjects)-1]
	}
	answer := &apiextv1.ConversionReview{Response: resp}
	if !h.noTypeMeta {
		answer.APIVersion, answer.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// serve starts h on a loopback TLS server and returns the widgets CRD
// pointing at it.
func serve(t testing.TB, h *hook) (*apiextv1.CustomResourceDefinition, Endpoint) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	// Handshakes the tests make fail on purpose are not news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	crd := widgetsCRD(t)
	u := srv.URL + "/convert"
	crd.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u, CABundle: ca}
	ep, err := EndpointFor(crd)
	if err != nil {
		t.Fatal(err)
	}
	return crd, ep
}

func widgetsCRD(t testing.TB) *apiextv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile("testdata/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// widget is a stored widget at version; title goes to spec.name at v1.
func widget(name, version, title string, size int64, color string, labels map[string]string) *unstructured.Unstructured {
	spec := map[string]any{"size": size}
	if version == "v1" {
		spec["name"] = title
	} else {
		spec["title"] = title
	}
	if color != "" {
		spec["color"] = color
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/" + version,
		"kind":       "Widget",
		"metadata": map[string]any{
			"name": name, "namespace": "ns", "uid": "uid-" + name,
			"resourceVersion": "7", "generation": int64(1),
		},
		"spec": spec,
	}}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

// widgets is a mixed set: stored at v1 and at v2, one labelled fail=yes.
func widgets() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		widget("a", "v1", "alpha", 1, "red", nil),
		widget("b", "v2", "beta", 2, "blue", nil),
		widget("c", "v1", "gamma", 3, "", map[string]string{"fail": "yes"}),
		widget("d", "v2", "delta", 4, "green", map[string]string{"tier": "gold"}),
	}
}
