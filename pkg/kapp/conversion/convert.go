package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// Check names the step of the apiserver's webhook converter
// (webhook_converter.go) that refused an answer. Each refusal makes the
// read fail: a GET of the object, and every LIST that holds it.
type Check string

const (
	// CheckCall: the review could not be sent or answered (connection, TLS,
	// timeout, an HTTP status other than 2xx, a body that is no review).
	CheckCall Check = "call"
	// CheckReviewVersions: the CRD's conversionReviewVersions hold neither
	// v1 nor v1beta1.
	CheckReviewVersions Check = "reviewVersions"
	// CheckReviewKind: a v1 answer is not apiextensions.k8s.io/v1
	// ConversionReview.
	CheckReviewKind Check = "reviewKind"
	// CheckNoResponse: the answer has no response.
	CheckNoResponse Check = "noResponse"
	// CheckUID: response.uid is not the request's uid (v1 only).
	CheckUID Check = "uid"
	// CheckResult: response.result.status is not Success; Detail holds the
	// webhook's message.
	CheckResult Check = "result"
	// CheckCount: not one converted object per object sent.
	CheckCount Check = "count"
	// CheckObject: a converted object is not a decodable object.
	CheckObject Check = "object"
	// CheckAPIVersion: a converted object is not at the desired version.
	CheckAPIVersion Check = "apiVersion"
	// CheckKind: a converted object changed kind.
	CheckKind Check = "kind"
	// CheckName, CheckNamespace, CheckObjectUID: a converted object changed
	// metadata.name, metadata.namespace or metadata.uid.
	CheckName      Check = "name"
	CheckNamespace Check = "namespace"
	CheckObjectUID Check = "objectUID"
	// CheckMetadata: a converted object's metadata is missing or not an
	// object, or its labels or annotations are not maps of strings.
	CheckMetadata Check = "metadata"
	// CheckLabels: changed labels the apiserver's validation refuses.
	CheckLabels Check = "labels"
	// CheckAnnotations: changed annotations the apiserver's validation
	// refuses (among them the 256 KiB total size limit).
	CheckAnnotations Check = "annotations"
)

// ResponseError is a conversion the apiserver would refuse: which check
// failed, the index of the converted object it concerns (-1: the whole
// review) and the detail (the webhook's message, or the values compared).
type ResponseError struct {
	Check  Check
	Index  int
	Detail string
	// Unanswered: a CheckCall refusal where no webhook answered: the
	// review could not be delivered (connection, TLS, timeout) or a
	// gateway said the webhook is unreachable (Unanswered). The probe
	// then verified nothing: the caller reports that, not a refusal.
	Unanswered bool
}

func (e *ResponseError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("conversion webhook answer refused (%s) at object %d: %s", e.Check, e.Index, e.Detail)
	}
	return fmt.Sprintf("conversion webhook answer refused (%s): %s", e.Check, e.Detail)
}

func refuse(check Check, index int, format string, args ...any) *ResponseError {
	return &ResponseError{Check: check, Index: index, Detail: fmt.Sprintf(format, args...)}
}

var (
	reviewV1      = apiextv1.SchemeGroupVersion.WithKind("ConversionReview")
	reviewV1beta1 = apiextv1beta1.SchemeGroupVersion.WithKind("ConversionReview")
)

// Converter converts objects through a webhook as the apiserver's webhook
// converter does for a list: the objects already at the desired version
// are not sent, the others go in one ConversionReview whatever versions
// they are at, and the answer passes the apiserver's checks before the
// converted objects are taken, with the original metadata restored but for
// labels and annotations (restoreObjectMeta).
type Converter struct {
	Transport Transport
	// ReviewVersions is the CRD's conversionReviewVersions: the first of
	// v1 and v1beta1 it names is used.
	ReviewVersions []string
	// NewUID makes request uids; nil: uuid.NewUUID, as the apiserver.
	NewUID func() types.UID
}

// Convert converts objs to the version gv. The result holds one object per
// input, at the same index: a new object for each one sent, the input
// itself for each one already at gv. An answer the apiserver would refuse
// is a *ResponseError; a canceled ctx is returned as the context's error.
func (c *Converter) Convert(ctx context.Context, objs []*unstructured.Unstructured, gv schema.GroupVersion) ([]*unstructured.Unstructured, error) {
	// The apiserver picks the review version before it looks at the
	// objects: without a supported one even a conversion that sends
	// nothing fails.
	version := ""
	for _, v := range c.ReviewVersions {
		if v == apiextv1.SchemeGroupVersion.Version || v == apiextv1beta1.SchemeGroupVersion.Version {
			version = v
			break
		}
	}
	if version == "" {
		return nil, refuse(CheckReviewVersions, -1, "no supported conversion review versions in %v", c.ReviewVersions)
	}
	desired := gv.String()
	out := make([]*unstructured.Unstructured, len(objs))
	var sent []int
	for i, o := range objs {
		if o.GetAPIVersion() == desired {
			out[i] = o
			continue
		}
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return out, nil
	}
	raws := make([]runtime.RawExtension, len(sent))
	for j, i := range sent {
		b, err := json.Marshal(objs[i].Object)
		if err != nil {
			return nil, fmt.Errorf("encoding object %d: %w", i, err)
		}
		raws[j] = runtime.RawExtension{Raw: b}
	}
	newUID := c.NewUID
	if newUID == nil {
		newUID = uuid.NewUUID
	}
	uid := newUID()
	req := &apiextv1.ConversionRequest{UID: uid, DesiredAPIVersion: desired, Objects: raws}
	var body []byte
	var err error
	if version == apiextv1.SchemeGroupVersion.Version {
		body, err = json.Marshal(&apiextv1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: reviewV1.GroupVersion().String(), Kind: reviewV1.Kind},
			Request:  req,
			Response: &apiextv1.ConversionResponse{},
		})
	} else {
		body, err = json.Marshal(&apiextv1beta1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: reviewV1beta1.GroupVersion().String(), Kind: reviewV1beta1.Kind},
			Request:  &apiextv1beta1.ConversionRequest{UID: uid, DesiredAPIVersion: desired, Objects: raws},
			Response: &apiextv1beta1.ConversionResponse{},
		})
	}
	if err != nil {
		return nil, fmt.Errorf("encoding the review: %w", err)
	}
	answer, err := c.Transport.Post(ctx, body)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		re := refuse(CheckCall, -1, "%v", err)
		re.Unanswered = Unanswered(err)
		return nil, re
	}
	converted, rerr := readAnswer(answer, version, uid)
	if rerr != nil {
		return nil, rerr
	}
	if len(converted) != len(sent) {
		return nil, refuse(CheckCount, -1, "returned %d objects, expected %d", len(converted), len(sent))
	}
	for j, i := range sent {
		original := objs[i]
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(converted[j].Raw); err != nil {
			return nil, refuse(CheckObject, j, "%v", err)
		}
		if got := u.GroupVersionKind().GroupVersion(); got != gv {
			return nil, refuse(CheckAPIVersion, j, "expected %v, received %v", gv, got)
		}
		if e, a := original.GetKind(), u.GetKind(); e != a {
			return nil, refuse(CheckKind, j, "expected %v, received %v", e, a)
		}
		if e, a := original.GetName(), u.GetName(); e != a {
			return nil, refuse(CheckName, j, "%v != %v", e, a)
		}
		if e, a := original.GetNamespace(), u.GetNamespace(); e != a {
			return nil, refuse(CheckNamespace, j, "%v != %v", e, a)
		}
		if e, a := original.GetUID(), u.GetUID(); e != a {
			return nil, refuse(CheckObjectUID, j, "%v != %v", e, a)
		}
		if rerr := restoreObjectMeta(original, u, j); rerr != nil {
			return nil, rerr
		}
		out[i] = u
	}
	return out, nil
}

// reviewHeader is the type of an answer as the apiserver's decoder sees it.
type reviewHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// readAnswer decodes the answer as the apiserver's client does (a legacy
// codec into the review type of the request: a v1 answer to a v1beta1
// request is not converted and fails) and applies
// getConvertedObjectsFromResponse.
func readAnswer(answer []byte, version string, uid types.UID) ([]runtime.RawExtension, *ResponseError) {
	if len(answer) == 0 {
		return nil, refuse(CheckCall, -1, "0-length response")
	}
	var h reviewHeader
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(answer, &h); err != nil {
		return nil, refuse(CheckCall, -1, "decoding the answer: %v", err)
	}
	want := reviewV1
	if version == apiextv1beta1.SchemeGroupVersion.Version {
		want = reviewV1beta1
	}
	// The decoder fills what the answer leaves empty from the requested
	// type; another registered type does not convert to it.
	gvk := schema.FromAPIVersionAndKind(h.APIVersion, h.Kind)
	if h.APIVersion == "" {
		gvk.Group, gvk.Version = want.Group, want.Version
	}
	if h.Kind == "" {
		gvk.Kind = want.Kind
	}
	if gvk != want {
		if version == apiextv1.SchemeGroupVersion.Version {
			return nil, refuse(CheckReviewKind, -1, "expected webhook response of %v, got %v", want, gvk)
		}
		return nil, refuse(CheckCall, -1, "answer of type %v does not decode into %v", gvk, want)
	}
	if version == apiextv1.SchemeGroupVersion.Version {
		var r apiextv1.ConversionReview
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(answer, &r); err != nil {
			return nil, refuse(CheckCall, -1, "decoding the answer: %v", err)
		}
		// The apiserver compares the type the answer states.
		if got := r.GroupVersionKind(); got != reviewV1 {
			return nil, refuse(CheckReviewKind, -1, "expected webhook response of %v, got %v", reviewV1, got)
		}
		if r.Response == nil {
			return nil, refuse(CheckNoResponse, -1, "no response provided")
		}
		if r.Response.UID != uid {
			return nil, refuse(CheckUID, -1, "expected response.uid=%q, got %q", uid, r.Response.UID)
		}
		if r.Response.Result.Status != metav1.StatusSuccess {
			return nil, refuse(CheckResult, -1, "%s", resultDetail(r.Response.Result))
		}
		return r.Response.ConvertedObjects, nil
	}
	var r apiextv1beta1.ConversionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(answer, &r); err != nil {
		return nil, refuse(CheckCall, -1, "decoding the answer: %v", err)
	}
	if r.Response == nil {
		return nil, refuse(CheckNoResponse, -1, "no response provided")
	}
	if r.Response.Result.Status != metav1.StatusSuccess {
		return nil, refuse(CheckResult, -1, "%s", resultDetail(r.Response.Result))
	}
	return r.Response.ConvertedObjects, nil
}

func resultDetail(s metav1.Status) string {
	if s.Message != "" {
		return s.Message
	}
	return fmt.Sprintf("response.result.status was '%s', not 'Success'", s.Status)
}

// restoreObjectMeta takes the original metadata into converted and keeps
// only the answer's labels and annotations, validated when they changed,
// as the apiserver's restoreObjectMeta.
func restoreObjectMeta(original, converted *unstructured.Unstructured, index int) *ResponseError {
	obj, found := converted.Object["metadata"]
	if !found {
		return refuse(CheckMetadata, index, "missing metadata in converted object")
	}
	responseMeta, ok := obj.(map[string]any)
	if !ok {
		return refuse(CheckMetadata, index, "invalid metadata of type %T in converted object", obj)
	}
	if m, ok := original.Object["metadata"]; ok {
		converted.Object["metadata"] = runtime.DeepCopyJSONValue(m)
	} else {
		converted.Object["metadata"] = map[string]any{}
	}
	convertedMeta, ok := converted.Object["metadata"].(map[string]any)
	if !ok {
		return refuse(CheckMetadata, index, "invalid metadata of type %T in input object", converted.Object["metadata"])
	}
	for _, fld := range []string{"labels", "annotations"} {
		obj, found := responseMeta[fld]
		if !found || obj == nil {
			delete(convertedMeta, fld)
			continue
		}
		responseField, ok := obj.(map[string]any)
		if !ok {
			return refuse(CheckMetadata, index, "invalid metadata.%s of type %T in converted object", fld, obj)
		}
		originalField, ok := convertedMeta[fld].(map[string]any)
		if !ok && convertedMeta[fld] != nil {
			return refuse(CheckMetadata, index, "invalid metadata.%s of type %T in original object", fld, convertedMeta[fld])
		}
		changed := len(originalField) != len(responseField)
		for k, v := range responseField {
			if _, ok := v.(string); !ok {
				return refuse(CheckMetadata, index, "metadata.%s[%s] must be a string, but is %T in converted object", fld, k, v)
			}
			if originalField[k] != v {
				changed = true
			}
		}
		if changed {
			m := make(map[string]string, len(responseField))
			for k, v := range responseField {
				m[k] = v.(string)
			}
			if fld == "labels" {
				if errs := metav1validation.ValidateLabels(m, field.NewPath("metadata", "labels")); len(errs) > 0 {
					return refuse(CheckLabels, index, "%v", errs.ToAggregate())
				}
			} else if errs := apivalidation.ValidateAnnotations(m, field.NewPath("metadata", "annotation")); len(errs) > 0 {
				return refuse(CheckAnnotations, index, "%v", errs.ToAggregate())
			}
		}
		convertedMeta[fld] = responseField
	}
	return nil
}

// AsResponseError returns the refusal err holds, if any.
func AsResponseError(err error) (*ResponseError, bool) {
	var re *ResponseError
	ok := errors.As(err, &re)
	return re, ok
}
