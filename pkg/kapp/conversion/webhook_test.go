package conversion

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hook is the shared test webhook (conversiontest.Hook).
type hook = conversiontest.Hook

// serve starts h on a loopback TLS server and returns the widgets CRD
// pointing at it, with its endpoint.
func serve(t testing.TB, h *hook) (*apiextv1.CustomResourceDefinition, Endpoint) {
	t.Helper()
	crd := conversiontest.Serve(t, h)
	ep, err := EndpointFor(crd)
	if err != nil {
		t.Fatal(err)
	}
	return crd, ep
}

func widgetsCRD(t testing.TB) *apiextv1.CustomResourceDefinition { return conversiontest.WidgetsCRD(t) }

var widget = conversiontest.Widget

func widgets() []*unstructured.Unstructured { return conversiontest.Widgets() }
