// Command lossless is the conversion webhook of a Widget whose v2 renames
// v1's spec.size to spec.dimensions: a true round trip (v1 -> v2 -> v1
// gives back every field). The build the conversion probe must pass.
package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	Size     *int64              `json:"size,omitempty"`
	Color    string              `json:"color,omitempty"`
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`
}

// WidgetV2 is the Widget at v2, the hub (the new storage version).
type WidgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV2Spec `json:"spec,omitempty"`
}

type WidgetV2Spec struct {
	Dimensions *int64              `json:"dimensions,omitempty"`
	Color      string              `json:"color,omitempty"`
	Replicas   *intstr.IntOrString `json:"replicas,omitempty"`
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

func main() { widget.Main("lossless", widget.Types{V1: &WidgetV1{}, V2: &WidgetV2{}}) }
