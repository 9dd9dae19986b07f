package widget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
)

// Convert sends one ConversionReview of objs (JSON objects with apiVersion
// and kind) to h, asking for apiVersion to, and returns the converted
// objects, or the failure the response reports: what a build does, for
// its tests.
func Convert(h http.Handler, to string, objs ...map[string]any) ([]map[string]any, error) {
	raws := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		raws[i] = data
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
		"request": map[string]any{"uid": "test", "desiredAPIVersion": to, "objects": raws},
	})
	if err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	var resp struct {
		Response struct {
			UID              string           `json:"uid"`
			ConvertedObjects []map[string]any `json:"convertedObjects"`
			Result           struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"result"`
		} `json:"response"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("decoding the response (HTTP %d): %w", rec.Code, err)
	}
	if resp.Response.UID != "test" {
		return nil, fmt.Errorf("response uid %q, not the request's", resp.Response.UID)
	}
	if resp.Response.Result.Status != "Success" {
		return nil, fmt.Errorf("conversion %s: %s", resp.Response.Result.Status, resp.Response.Result.Message)
	}
	return resp.Response.ConvertedObjects, nil
}

// Object is a Widget of kind Widget in group e2e.example.com at version
// (v1, v2) named name, with spec, as a ConversionReview carries it.
func Object(version, name string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "e2e.example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name}, "spec": spec}
}

// Case is one object of a build's table test: its v1 spec, the v2 spec
// the build makes of it, the v1 spec it makes of that on the way back,
// or the failure it answers (a substring).
type Case struct {
	Name             string
	V1, V2, V1Back   map[string]any
	FailureSubstring string
}

// RoundTrip converts c.V1 to v2 and back through h and says how the
// result differs from the case ("" when it does not).
func RoundTrip(h http.Handler, c Case) string {
	v2, err := Convert(h, "e2e.example.com/v2", Object("v1", c.Name, c.V1))
	if c.FailureSubstring != "" {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.FailureSubstring)) {
			return fmt.Sprintf("v1 -> v2: error %v, want one with %q", err, c.FailureSubstring)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("v1 -> v2: %v", err)
	}
	if diff := specDiff(v2[0], "e2e.example.com/v2", c.V2); diff != "" {
		return "v1 -> v2: " + diff
	}
	back, err := Convert(h, "e2e.example.com/v1", v2[0])
	if err != nil {
		return fmt.Sprintf("v2 -> v1: %v", err)
	}
	if diff := specDiff(back[0], "e2e.example.com/v1", c.V1Back); diff != "" {
		return "v2 -> v1: " + diff
	}
	return ""
}

func specDiff(obj map[string]any, apiVersion string, want map[string]any) string {
	if obj["apiVersion"] != apiVersion {
		return fmt.Sprintf("apiVersion %v, want %s", obj["apiVersion"], apiVersion)
	}
	got, _ := json.Marshal(obj["spec"])
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		return fmt.Sprintf("spec %s, want %s", got, exp)
	}
	return ""
}
