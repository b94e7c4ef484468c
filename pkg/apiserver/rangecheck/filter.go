package rangecheck

import (
	"bytes"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Target is the definition and kind of the objects of one resource.
type Target struct {
	// Kind names the object in the 422 Status (details.kind).
	Kind string
	// Definition is the OpenAPI model name of the object (e.g.
	// olmv1.ClusterCatalog{}.OpenAPIModelName()).
	Definition string
}

// FilterConfig configures WithRangeCheck.
type FilterConfig struct {
	Checker *Checker
	// Targets are the checked resources. Writes of the resource itself and
	// of its status subresource are checked; other subresources are not.
	Targets map[schema.GroupResource]Target
	// Serializer encodes the 422 Status in the media type the client accepts.
	Serializer runtime.NegotiatedSerializer
	// MaxRequestBodyBytes bounds how much of a body is read (the generic
	// server's limit, 3 MiB by default); <= 0 means no bound. A longer body
	// is passed on unchecked, and the handler answers it with its own 413.
	MaxRequestBodyBytes int64
}

// WithRangeCheck returns a filter in front of next that answers 422 Invalid,
// with one cause per field (e.g. spec.priority), to a create (POST), update
// (PUT) or patch (PATCH) of a target resource or its status whose body puts
// a number outside the range of an int32/int64 field (see Checker.Check and
// CheckBody). It needs the RequestInfo in the context, so it must run after
// WithRequestInfo (inside the generic handler chain, e.g. wrapping the
// apiHandler of BuildHandlerChainFunc, which also puts it behind
// authentication and authorization). The body it reads is handed on
// unchanged. Every other request (reads, watches, deletes, other groups and
// subresources, protobuf bodies) goes to next without its body being touched.
func WithRangeCheck(next http.Handler, cfg FilterConfig) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.RequestInfoFrom(r.Context())
		if !ok || !info.IsResourceRequest || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if info.Verb != "create" && info.Verb != "update" && info.Verb != "patch" {
			next.ServeHTTP(w, r)
			return
		}
		if info.Subresource != "" && info.Subresource != "status" {
			next.ServeHTTP(w, r)
			return
		}
		gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
		target, ok := cfg.Targets[gr]
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		format := FormatOf(r.Header.Get("Content-Type"))
		if format == Unchecked {
			next.ServeHTTP(w, r)
			return
		}
		body, complete, err := readBounded(r.Body, cfg.MaxRequestBodyBytes)
		// Whatever was read is put back in front of the rest of the body.
		r.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(body), r.Body), Closer: r.Body}
		if err != nil || !complete {
			next.ServeHTTP(w, r)
			return
		}
		errs, name := cfg.Checker.CheckBody(target.Definition, format, body)
		if len(errs) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if info.Name != "" {
			name = info.Name
		}
		status := apierrors.NewInvalid(schema.GroupKind{Group: info.APIGroup, Kind: target.Kind}, name, errs)
		gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
		responsewriters.ErrorNegotiated(status, cfg.Serializer, gv, w, r)
	})
}

// readBounded reads at most limit+1 bytes of body and reports whether that
// was all of it (limit <= 0: no bound).
func readBounded(body io.Reader, limit int64) ([]byte, bool, error) {
	if limit <= 0 {
		data, err := io.ReadAll(body)
		return data, err == nil, err
	}
	lr := &io.LimitedReader{R: body, N: limit + 1}
	data, err := io.ReadAll(lr)
	return data, lr.N > 0, err
}

type readCloser struct {
	io.Reader
	io.Closer
}
