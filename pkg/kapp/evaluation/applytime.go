package evaluation

import (
	"encoding/json"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplyTimeAnnotation marks the server-side dry run of a CRD update whose
// conversion webhook's new code ships in the same kapp deploy, rolled out
// before the CRD changes: its value is the ordering facts (JSON of
// finding.ConversionOrdering). The kapp hook's dry run runs before the
// rollout and reaches crd-upgrade-safety's admission webhook, whose probe
// would ask the code running now; the admission webhook, on a dry run
// only, takes the mark as the pair's Ordering (the apply-time verdict, a
// warning). The update kapp then sends carries no mark, and is probed.
const ApplyTimeAnnotation = "dry-run.crd-upgrade-safety.kapp.k14s.io/conversion-at-apply-time"

// MarkApplyTime is a copy of send (the CRD the dry run sends) with the
// ApplyTimeAnnotation of o.
func MarkApplyTime(send *unstructured.Unstructured, o *finding.ConversionOrdering) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("marking the dry run of CRD %s: %w", send.GetName(), err)
	}
	out := send.DeepCopy()
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[ApplyTimeAnnotation] = string(b)
	out.SetAnnotations(ann)
	return out, nil
}

// ApplyTimeMark is the ordering facts a dry run of crd carries
// (ApplyTimeAnnotation), nil when it carries none or none that decodes.
func ApplyTimeMark(crd *apiextv1.CustomResourceDefinition) *finding.ConversionOrdering {
	v, ok := crd.Annotations[ApplyTimeAnnotation]
	if !ok {
		return nil
	}
	o := &finding.ConversionOrdering{}
	if err := json.Unmarshal([]byte(v), o); err != nil || len(o.Shipped()) == 0 {
		return nil
	}
	return o
}
