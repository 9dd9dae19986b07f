package preflight

import (
	"testing"

	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestListVersion(t *testing.T) {
	crd := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{Versions: []apiextv1.CustomResourceDefinitionVersion{
		{Name: "v1alpha1", Served: false},
		{Name: "v1beta1", Served: true},
		{Name: "v1", Served: true, Storage: true},
	}}}
	require.Equal(t, "v1", listVersion(crd))
	crd.Spec.Versions[2].Served = false
	require.Equal(t, "v1beta1", listVersion(crd))
	crd.Spec.Versions[1].Served = false
	require.Equal(t, "", listVersion(crd))
}
