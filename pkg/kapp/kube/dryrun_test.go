package kube_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// dryRunRequest is what the dry-run stub received.
type dryRunRequest struct {
	method, path, query, contentType, accept string
	body                                     []byte
}

// dryRunStub answers CRD requests as the apiserver does: a body in the
// negotiated content type (protobuf when accepted), and when refuse is
// set a 422 Invalid status, encoded the same way.
type dryRunStub struct {
	refuse *apierrors.StatusError
	// warnings are sent as Warning headers, as the apiserver sends them.
	warnings []string
	mu       sync.Mutex
	reqs     []dryRunRequest
}

func (s *dryRunStub) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, dryRunRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Accept"), body})
		s.mu.Unlock()
		var answer runtime.Object = &metav1.Status{Status: metav1.StatusSuccess}
		code := http.StatusOK
		if s.refuse != nil {
			st := s.refuse.Status()
			answer, code = &st, int(st.Code)
		}
		mediaType := runtime.ContentTypeJSON
		if strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
			mediaType = runtime.ContentTypeProtobuf
		}
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		require.True(t, ok)
		w.Header().Set("Content-Type", mediaType)
		for _, warning := range s.warnings {
			h, err := utilnet.NewWarningHeader(299, "-", warning)
			require.NoError(t, err)
			w.Header().Add("Warning", h)
		}
		w.WriteHeader(code)
		require.NoError(t, scheme.Codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion).Encode(answer, w))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestClientRESTDryRun: with REST set, creates and updates are
// sent with the very body the dynamic client sends, as dryRun=All, asking
// for a protobuf answer; refusals come back as the same API errors.
func TestClientRESTDryRun(t *testing.T) {
	obj := &unstructured.Unstructured{}
	js, err := yaml.YAMLToJSON([]byte(testcrd.SafeCRD))
	require.NoError(t, err)
	require.NoError(t, obj.UnmarshalJSON(js))
	obj.SetResourceVersion("42")

	sendWarned := func(t *testing.T, stub *dryRunStub, useREST bool, verb kube.Verb) ([]string, error) {
		srv := stub.serve(t)
		cfg := &rest.Config{Host: srv.URL, QPS: -1}
		dyn, err := dynamic.NewForConfig(cfg)
		require.NoError(t, err)
		c := &kube.Client{Client: dyn}
		if useREST {
			core, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			c.REST = core.Discovery().RESTClient()
		}
		return c.DryRun(context.Background(), verb, obj)
	}
	send := func(t *testing.T, stub *dryRunStub, useREST bool, verb kube.Verb) error {
		_, err := sendWarned(t, stub, useREST, verb)
		return err
	}

	for _, verb := range []kube.Verb{kube.VerbCreate, kube.VerbUpdate} {
		t.Run(string(verb), func(t *testing.T) {
			viaDynamic, viaREST := &dryRunStub{}, &dryRunStub{}
			require.NoError(t, send(t, viaDynamic, false, verb))
			require.NoError(t, send(t, viaREST, true, verb))
			require.Len(t, viaDynamic.reqs, 1)
			require.Len(t, viaREST.reqs, 1)
			d, r := viaDynamic.reqs[0], viaREST.reqs[0]
			require.Equal(t, d.method, r.method)
			require.Equal(t, d.path, r.path)
			require.Equal(t, "dryRun=All", r.query)
			require.Equal(t, d.query, r.query)
			require.Equal(t, d.contentType, r.contentType)
			require.Equal(t, string(d.body), string(r.body), "the body kapp's dynamic client sends, byte for byte")
			require.Equal(t, runtime.ContentTypeProtobuf+", "+runtime.ContentTypeJSON, r.accept)
		})
	}

	t.Run("warnings", func(t *testing.T) {
		const warning = `x-kubernetes-list-type: set for items of type "object" is not supported by server-side apply or CEL validation rules`
		got, err := sendWarned(t, &dryRunStub{warnings: []string{warning, `unrecognized format "uint8"`}}, true, kube.VerbUpdate)
		require.NoError(t, err)
		require.Equal(t, []string{warning, `unrecognized format "uint8"`}, got)
	})

	t.Run("refused", func(t *testing.T) {
		invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "widgets.example.com",
			field.ErrorList{field.Forbidden(field.NewPath("spec", "validation", "openAPIV3Schema"), "no way")})
		stub := &dryRunStub{refuse: invalid}
		err := send(t, stub, true, kube.VerbUpdate)
		require.True(t, apierrors.IsInvalid(err), "%v", err)
		var st apierrors.APIStatus
		require.ErrorAs(t, err, &st)
		require.Equal(t, int32(http.StatusUnprocessableEntity), st.Status().Code)
		causes := st.Status().Details.Causes
		require.Equal(t, "spec.validation.openAPIV3Schema", causes[0].Field)
		require.Equal(t, "Forbidden: no way", causes[0].Message)
	})
}
