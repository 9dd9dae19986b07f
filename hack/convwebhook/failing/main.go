// Command failing is the conversion webhook of a Widget whose Go types
// take spec.replicas as an integer where the CRD's schema says
// x-kubernetes-int-or-string: a stored object holding a string there
// ("50%") cannot be unmarshalled, and controller-runtime's handler answers
// the whole ConversionReview with a failure (the apiserver's LIST of the
// resource then fails). Objects holding an integer convert as in the
// lossless build. The build the conversion probe must block, naming the
// objects it cannot convert.
package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/crdsafety/kapp/hack/convwebhook/widget"
)

// WidgetV1 is the Widget at v1, the spoke.
type WidgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV1Spec `json:"spec,omitempty"`
}

type WidgetV1Spec struct {
	Size  *int64 `json:"size,omitempty"`
	Color string `json:"color,omitempty"`
	// Replicas is an int-or-string in the schema: the bug.
	Replicas *int32 `json:"replicas,omitempty"`
}

// WidgetV2 is the Widget at v2, the hub.
type WidgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV2Spec `json:"spec,omitempty"`
}

type WidgetV2Spec struct {
	Dimensions *int64 `json:"dimensions,omitempty"`
	Color      string `json:"color,omitempty"`
	Replicas   *int32 `json:"replicas,omitempty"`
}

func (*WidgetV2) Hub() {}

func (src *WidgetV1) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*WidgetV2)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec = WidgetV2Spec{Dimensions: src.Spec.Size, Color: src.Spec.Color, Replicas: src.Spec.Replicas}
	return nil
}

func (dst *WidgetV1) ConvertFrom(hub conversion.Hub) error {
	src := hub.(*WidgetV2)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec = WidgetV1Spec{Size: src.Spec.Dimensions, Color: src.Spec.Color, Replicas: src.Spec.Replicas}
	return nil
}

func (in *WidgetV1) DeepCopyObject() runtime.Object { return widget.DeepCopy(in) }
func (in *WidgetV2) DeepCopyObject() runtime.Object { return widget.DeepCopy(in) }

func main() { widget.Main("failing", widget.Types{V1: &WidgetV1{}, V2: &WidgetV2{}}) }
