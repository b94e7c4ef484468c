package rangecheck

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// recorder is the handler behind the filter: it records what reached it.
type recorder struct {
	called bool
	body   []byte
	bodyIn io.ReadCloser
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.called = true
	r.bodyIn = req.Body
	r.body, _ = io.ReadAll(req.Body)
	w.WriteHeader(http.StatusOK)
}

func newFilter(next http.Handler, limit int64) http.Handler {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{})
	h := WithRangeCheck(next, FilterConfig{
		Checker: NewChecker(testDefinitions),
		Targets: map[schema.GroupResource]Target{
			{Group: "test.example", Resource: "roots"}: {Kind: "Root", Definition: "test.Root"},
		},
		Serializer:          serializer.NewCodecFactory(scheme),
		MaxRequestBodyBytes: limit,
	})
	return genericapifilters.WithRequestInfo(h, &request.RequestInfoFactory{
		APIPrefixes: sets.NewString("apis", "api"), GrouplessAPIPrefixes: sets.NewString("api"),
	})
}

func TestWithRangeCheck(t *testing.T) {
	const base = "/apis/test.example/v1/roots"
	bad := `{"metadata":{"name":"r"},"spec":{"num":3000000000}}`
	good := `{"metadata":{"name":"r"},"spec":{"num":2147483647}}`
	cases := []struct {
		name, method, path, contentType, body string
		limit                                 int64
		wantField                             string // "" when the request must reach the handler
	}{
		{"create out of range", http.MethodPost, base, "application/json", bad, 0, "spec.num"},
		{"create no content type", http.MethodPost, base, "", bad, 0, "spec.num"},
		{"create in range", http.MethodPost, base, "application/json", good, 0, ""},
		{"update", http.MethodPut, base + "/r", "application/json", bad, 0, "spec.num"},
		{"update status", http.MethodPut, base + "/r/status", "application/json", bad, 0, "spec.num"},
		{"apply yaml", http.MethodPatch, base + "/r?fieldManager=x", "application/apply-patch+yaml",
			"metadata:\n  name: r\nspec:\n  num: 3000000000\n", 0, "spec.num"},
		{"merge patch", http.MethodPatch, base + "/r", "application/merge-patch+json", `{"spec":{"num":-2147483649}}`, 0, "spec.num"},
		{"strategic merge patch", http.MethodPatch, base + "/r", "application/strategic-merge-patch+json", bad, 0, "spec.num"},
		{"json patch", http.MethodPatch, base + "/r", "application/json-patch+json",
			`[{"op":"replace","path":"/spec/num","value":3000000000}]`, 0, "spec.num"},
		{"patch status", http.MethodPatch, base + "/r/status", "application/merge-patch+json", bad, 0, "spec.num"},
		{"within the body limit", http.MethodPost, base, "application/json", bad, int64(len(bad)), "spec.num"},
		{"over the body limit goes on unchecked", http.MethodPost, base, "application/json", bad, int64(len(bad) - 1), ""},
		{"other subresource", http.MethodPut, base + "/r/scale", "application/json", bad, 0, ""},
		{"other resource", http.MethodPost, "/apis/test.example/v1/others", "application/json", bad, 0, ""},
		{"other group", http.MethodPost, "/apis/other.example/v1/roots", "application/json", bad, 0, ""},
		{"protobuf", http.MethodPost, base, "application/vnd.kubernetes.protobuf", bad, 0, ""},
		{"delete with options", http.MethodDelete, base + "/r", "application/json", bad, 0, ""},
		{"non-resource", http.MethodPost, "/healthz", "application/json", bad, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := &recorder{}
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			rw := httptest.NewRecorder()
			newFilter(next, tc.limit).ServeHTTP(rw, req)
			if tc.wantField == "" {
				if !next.called || rw.Code != http.StatusOK {
					t.Fatalf("handler called=%v code=%d %s, want the request passed on", next.called, rw.Code, rw.Body)
				}
				if string(next.body) != tc.body {
					t.Errorf("handler read body %q, want %q", next.body, tc.body)
				}
				return
			}
			if next.called {
				t.Fatal("handler called for an out-of-range body")
			}
			if rw.Code != http.StatusUnprocessableEntity {
				t.Fatalf("code = %d, want 422: %s", rw.Code, rw.Body)
			}
			var status metav1.Status
			if err := json.Unmarshal(rw.Body.Bytes(), &status); err != nil {
				t.Fatalf("response is not a JSON Status: %v: %s", err, rw.Body)
			}
			if status.Reason != metav1.StatusReasonInvalid || status.Details == nil ||
				status.Details.Kind != "Root" || status.Details.Group != "test.example" || status.Details.Name != "r" ||
				len(status.Details.Causes) != 1 || status.Details.Causes[0].Field != tc.wantField {
				t.Errorf("status = %+v, want Invalid Root r naming %s", status, tc.wantField)
			}
		})
	}
}

// TestWithRangeCheckLeavesOtherBodiesAlone checks that requests the filter
// does not check get the very body reader the client sent, unread.
func TestWithRangeCheckLeavesOtherBodiesAlone(t *testing.T) {
	for _, tc := range []struct{ method, path, contentType string }{
		{http.MethodGet, "/apis/test.example/v1/roots?watch=true", ""},
		{http.MethodGet, "/apis/test.example/v1/roots/r/content", ""},
		{http.MethodPost, "/apis/test.example/v1/roots", "application/vnd.kubernetes.protobuf"},
		{http.MethodDelete, "/apis/test.example/v1/roots/r", "application/json"},
	} {
		body := io.NopCloser(bytes.NewReader([]byte(`{"spec":{"num":3000000000}}`)))
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Body = body
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		next := &recorder{}
		newFilter(next, 0).ServeHTTP(httptest.NewRecorder(), req)
		if !next.called || next.bodyIn != body {
			t.Errorf("%s %s: handler called=%v with a different body reader", tc.method, tc.path, next.called)
		}
	}
}

// TestWithRangeCheckNegotiatesYAML checks that the 422 is written in the
// media type the client accepts.
func TestWithRangeCheckNegotiatesYAML(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/apis/test.example/v1/roots", strings.NewReader(`{"spec":{"num":3000000000}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/yaml")
	rw := httptest.NewRecorder()
	newFilter(&recorder{}, 0).ServeHTTP(rw, req)
	if rw.Code != http.StatusUnprocessableEntity || rw.Header().Get("Content-Type") != "application/yaml" ||
		!strings.Contains(rw.Body.String(), "field: spec.num") {
		t.Errorf("got %d %q:\n%s; want a 422 YAML Status naming spec.num", rw.Code, rw.Header().Get("Content-Type"), rw.Body)
	}
}
