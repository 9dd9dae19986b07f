// Package conversiontest serves conversion webhooks for tests: Hook, a
// webhook for the widgets of widgets.yaml (v1's spec.name is spec.title
// at v2 and v3) with a switch for each way of being wrong, on a loopback
// TLS server (Serve), and stored widgets to send through it. The
// conversion probe's tests and those of the places it runs (evaluation,
// the tools command, the webhook) share it.
package conversiontest

import (
	_ "embed"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

//go:embed widgets.yaml
var widgetsYAML []byte

// Hook is a conversion webhook for the widgets of widgets.yaml:
// v1's spec.name is spec.title at v2 and v3. Each field turns on one way
// of being wrong.
type Hook struct {
	Lossy      bool // drops spec.color on the way to v2
	HubOnly    bool // converts only to and from v2, the hub
	FailLabel  bool // refuses objects labelled fail=yes
	WrongUID   bool
	DropOne    bool // answers one object less than sent
	Rename     bool // changes the first object's name
	Keep       bool // answers the objects at the version they came at
	WrongKind  bool
	NoTypeMeta bool // answers without apiVersion and kind
	NoMeta     bool // drops metadata from converted objects
	IntAnno    bool // answers an annotation whose value is a number
	BadLabel   bool // adds a label the apiserver refuses
	ChangeUID  bool // changes the objects' uid
	AddLabel   bool // adds a valid label (kept) and changes generation (restored)
	// Stash adds an annotation of this many bytes on the way to v2
	Stash int
	// HttpStatus answers with this status
	HttpStatus int
	// Typed drops the spec fields the target version's Go type lacks, as
	// a webhook decoding into typed structs does
	Typed bool
	// OneAtATime refuses reviews of more than one object
	OneAtATime bool
	// Delay before each answer
	Delay time.Duration
}

func (h *Hook) convert(obj map[string]any, to string) (map[string]any, error) {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	from := strings.TrimPrefix(u.GetAPIVersion(), "example.com/")
	if h.FailLabel && u.GetLabels()["fail"] == "yes" {
		return nil, fmt.Errorf("cannot unmarshal spec.size of %s", u.GetName())
	}
	if h.HubOnly && from != "v2" && to != "v2" {
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
		if h.Typed {
			known := map[string]bool{"size": true, "color": true, "title": to != "v1", "name": to == "v1", "shape": to == "v3"}
			for k := range spec {
				if !known[k] {
					delete(spec, k)
				}
			}
		}
		if h.Lossy && to == "v2" {
			delete(spec, "color")
		}
	}
	if h.Stash > 0 && to == "v2" {
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a["example.com/stash"] = strings.Repeat("x", h.Stash)
		u.SetAnnotations(a)
	}
	if !h.Keep {
		u.SetAPIVersion("example.com/" + to)
	}
	if h.WrongKind {
		u.SetKind("Gadget")
	}
	if h.ChangeUID {
		u.SetUID("other")
	}
	if h.BadLabel {
		u.SetLabels(map[string]string{"bad label": "x"})
	}
	if h.AddLabel {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["converted"] = to
		u.SetLabels(l)
		u.SetGeneration(99)
	}
	if h.NoMeta {
		delete(u.Object, "metadata")
	}
	if h.IntAnno {
		_ = unstructured.SetNestedField(u.Object, int64(1), "metadata", "annotations", "n")
	}
	return u.Object, nil
}

func (h *Hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.HttpStatus != 0 {
		http.Error(w, "unavailable", h.HttpStatus)
		return
	}
	var review apiextv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := review.Request
	if h.Delay > 0 {
		time.Sleep(h.Delay)
	}
	to := strings.TrimPrefix(req.DesiredAPIVersion, "example.com/")
	resp := &apiextv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	if h.WrongUID {
		resp.UID = "not-the-request"
	}
	if h.OneAtATime && len(req.Objects) > 1 {
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
		if h.Rename && i == 0 {
			(&unstructured.Unstructured{Object: out}).SetName("renamed")
		}
		b, _ := json.Marshal(out)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
	}
	if h.DropOne && len(resp.ConvertedObjects) > 0 {
		resp.ConvertedObjects = resp.ConvertedObjects[:len(resp.ConvertedObjects)-1]
	}
	answer := &apiextv1.ConversionReview{Response: resp}
	if !h.NoTypeMeta {
		answer.APIVersion, answer.Kind = "apiextensions.k8s.io/v1", "ConversionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// Serve starts h on a loopback TLS server and returns the widgets CRD
// whose conversion webhook is its /convert URL with its certificate as the
// CA bundle; the server stops when the test ends.
func Serve(t testing.TB, h *Hook) *apiextv1.CustomResourceDefinition {
	t.Helper()
	u, ca := Start(t, h)
	crd := WidgetsCRD(t)
	crd.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u, CABundle: ca}
	return crd
}

// Start starts h on a loopback TLS server and returns its /convert URL and
// its certificate (PEM), the CA bundle that verifies it; the server stops
// when the test ends.
func Start(t testing.TB, h http.Handler) (url string, caPEM []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	// Handshakes the tests make fail on purpose are not news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/convert", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// WidgetsCRD is widgets.yaml: versions v1, v2 (storage) and v3, served,
// converted by a webhook; status.storedVersions [v1 v2].
func WidgetsCRD(t testing.TB) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(widgetsYAML, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// WidgetsYAML is widgets.yaml, for tests that write it to a file.
func WidgetsYAML() []byte { return append([]byte(nil), widgetsYAML...) }

// Widget is a stored widget at version, in namespace ns; title goes to
// spec.name at v1.
func Widget(name, version, title string, size int64, color string, labels map[string]string) *unstructured.Unstructured {
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

// Widgets is a mixed set: ns/a and ns/c stored at v1, ns/b and ns/d at
// v2, c labelled fail=yes (Hook.FailLabel refuses it).
func Widgets() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		Widget("a", "v1", "alpha", 1, "red", nil),
		Widget("b", "v2", "beta", 2, "blue", nil),
		Widget("c", "v1", "gamma", 3, "", map[string]string{"fail": "yes"}),
		Widget("d", "v2", "delta", 4, "green", map[string]string{"tier": "gold"}),
	}
}
