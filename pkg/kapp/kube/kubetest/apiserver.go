// Package kubetest is an apiserver stub for the tests of the kube client
// and of its callers: one custom resource type, paged as the real
// apiserver pages it, and stalls on demand.
package kubetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// APIServer is an apiserver stub for one custom resource type,
// /apis/example.com/v1/widgets, that pages its LIST answers as the real one
// does: at most `limit` items, a continue token that only it issues (a
// token it did not issue is refused, 410 Gone), and remainingItemCount when
// reportRemaining is set. It records every LIST it answers.
type APIServer struct {
	T       testing.TB
	Widgets int
	// Spec, when set, is the spec of every widget.
	Spec            map[string]any
	ReportRemaining bool
	// StallAfter: LISTs after this many answers wait until the client gives
	// up (0: never).
	StallAfter int
	// StallGets: CRD GETs wait until the client gives up.
	StallGets bool
	CRD       *apiextv1.CustomResourceDefinition
	// ViaREST: the client reads pages through a REST client, as kube.New
	// builds it, not the dynamic client.
	ViaREST bool
	// VersionReads counts the GETs of /version (it answers 1.37).
	VersionReads int
	// Forbidden: every request other than /version is refused with 403
	// Forbidden, as RBAC refuses a request the identity may not make.
	Forbidden bool

	mu    sync.Mutex
	lists []ListRequest
}

// ListRequest is one LIST the APIServer answered: its limit and continue
// token.
type ListRequest struct {
	Limit    int64
	Continue string
}

// maxLists stops a client that loops (for example on the first page).
const maxLists = 1000

// Start serves the stub and returns a client of it (pages of 100).
func (s *APIServer) Start() *kube.Client {
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.T.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, QPS: -1}
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(s.T, err)
	core, err := kubernetes.NewForConfig(cfg)
	require.NoError(s.T, err)
	c := &kube.Client{Client: client, PageSize: 100, Discovery: core.Discovery()}
	if s.ViaREST {
		c.REST = core.Discovery().RESTClient()
	}
	return c
}

func (s *APIServer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/version":
		s.mu.Lock()
		s.VersionReads++
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"major": "1", "minor": "37", "gitVersion": "v1.37.2"})
	case s.Forbidden:
		writeJSON(w, http.StatusForbidden, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"reason": "Forbidden", "code": 403, "message": "forbidden: User \"system:serviceaccount:x:y\" cannot " + r.Method + " " + r.URL.Path})
	case r.URL.Path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com":
		if s.StallGets {
			<-r.Context().Done()
			return
		}
		writeJSON(w, http.StatusOK, s.CRD)
	case r.URL.Path == "/apis/example.com/v1/widgets" && r.Method == http.MethodGet:
		s.list(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"reason": "NotFound", "code": 404, "message": r.URL.Path + " not found"})
	}
}

func (s *APIServer) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := ListRequest{Continue: q.Get("continue")}
	if l := q.Get("limit"); l != "" {
		var err error
		if req.Limit, err = strconv.ParseInt(l, 10, 64); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	s.mu.Lock()
	s.lists = append(s.lists, req)
	n := len(s.lists)
	s.mu.Unlock()
	if n > maxLists {
		http.Error(w, "too many LISTs: the client loops", http.StatusInternalServerError)
		return
	}
	if s.StallAfter > 0 && n > s.StallAfter {
		<-r.Context().Done()
		return
	}

	start := 0
	if req.Continue != "" {
		offset, ok := strings.CutPrefix(req.Continue, "stub-token-")
		var err error
		if start, err = strconv.Atoi(offset); !ok || err != nil || start <= 0 || start >= s.Widgets {
			writeJSON(w, http.StatusGone, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
				"reason": "Expired", "code": 410, "message": "invalid continue token " + strconv.Quote(req.Continue)})
			return
		}
	}
	end := s.Widgets
	if req.Limit > 0 && int64(end-start) > req.Limit {
		end = start + int(req.Limit)
	}
	meta := map[string]any{"resourceVersion": "42"}
	if end < s.Widgets {
		meta["continue"] = fmt.Sprintf("stub-token-%d", end)
		if s.ReportRemaining {
			meta["remainingItemCount"] = s.Widgets - end
		}
	}
	items := make([]map[string]any, 0, end-start)
	for i := start; i < end; i++ {
		item := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": WidgetName(i), "namespace": "default"}}
		if s.Spec != nil {
			item["spec"] = s.Spec
		}
		items = append(items, item)
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": meta, "items": items})
}

// Requests are the LISTs answered so far.
func (s *APIServer) Requests() []ListRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ListRequest(nil), s.lists...)
}

// WidgetName is the name of the i-th widget.
// WidgetName is the name of the i-th widget.
func WidgetName(i int) string { return fmt.Sprintf("w%05d", i) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ResetRequests forgets the LISTs answered so far.
func (s *APIServer) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = nil
}
