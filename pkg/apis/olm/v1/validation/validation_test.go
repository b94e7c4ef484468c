package validation

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/versionrange"
)

// fieldErr is what a rejected row asserts about one produced error: its type
// and its exact field path.
type fieldErr struct {
	Type  field.ErrorType
	Field string
}

func (e fieldErr) String() string { return fmt.Sprintf("%s@%s", e.Type, e.Field) }

// Short constructors for the expectations of the tables.
func invalid(path string) fieldErr      { return fieldErr{field.ErrorTypeInvalid, path} }
func required(path string) fieldErr     { return fieldErr{field.ErrorTypeRequired, path} }
func forbidden(path string) fieldErr    { return fieldErr{field.ErrorTypeForbidden, path} }
func notSupported(path string) fieldErr { return fieldErr{field.ErrorTypeNotSupported, path} }
func tooLong(path string) fieldErr      { return fieldErr{field.ErrorTypeTooLong, path} }
func tooMany(path string) fieldErr      { return fieldErr{field.ErrorTypeTooMany, path} }
func duplicate(path string) fieldErr    { return fieldErr{field.ErrorTypeDuplicate, path} }

// expectErrors fails unless errs holds exactly the errors of want (type and
// field path, in any order): no error missing, none extra. An accepted row
// passes a nil want. Errors raised by this package (not by the apimachinery
// helpers for metadata and conditions) must also carry a detail telling the
// user what is allowed.
func expectErrors(t *testing.T, errs field.ErrorList, want []fieldErr) {
	t.Helper()
	got := make([]fieldErr, 0, len(errs))
	for _, e := range errs {
		got = append(got, fieldErr{e.Type, e.Field})
	}
	sortErrs := func(l []fieldErr) {
		sort.Slice(l, func(i, j int) bool { return l[i].String() < l[j].String() })
	}
	w := append([]fieldErr(nil), want...)
	sortErrs(got)
	sortErrs(w)
	if fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("errors = %v, want %v\nfull errors: %v", got, w, errs.ToAggregate())
	}
	for _, e := range errs {
		ours := !strings.HasPrefix(e.Field, "metadata.") && !strings.Contains(e.Field, "conditions")
		switch e.Type {
		case field.ErrorTypeInvalid, field.ErrorTypeRequired, field.ErrorTypeForbidden:
			if ours && e.Detail == "" {
				t.Errorf("error %q has no detail saying what is allowed", e.Error())
			}
		}
	}
}

// Fixtures: values of the lengths at the limits of the API reference.

// hex64 is a 64-digit sha256 digest.
const hex64 = "200d4ddb2a73594b91358fe6397424e975205bfbe44614f5846033cad64b3f05"

// dnsSubdomain returns a valid DNS-1123 subdomain of exactly n characters
// (n >= 1): 63-character labels of 'a' joined by dots.
func dnsSubdomain(n int) string {
	var b strings.Builder
	for remaining := n; remaining > 0; {
		l := min(63, remaining)
		if remaining-l == 1 {
			l-- // leave room for a '.' and a one-character label
		}
		b.WriteString(strings.Repeat("a", l))
		remaining -= l
		if remaining > 0 {
			b.WriteByte('.')
			remaining--
		}
	}
	return b.String()
}

// refOfLength returns a valid tag-based image reference of exactly n
// characters (n >= 12): quay.io/aaa...:v1.
func refOfLength(n int) string {
	return "quay.io/" + strings.Repeat("a", n-len("quay.io/")-len(":v1")) + ":v1"
}

// urlOfLength returns an https URL of exactly n characters.
func urlOfLength(n int) string {
	base := "https://catalogd.olmv1-system.svc/catalogs/"
	return base + strings.Repeat("a", n-len(base))
}

func intPtr(i int) *int { return &i }

var transitionTime = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "m", LastTransitionTime: transitionTime}
}

func TestValidateImageRef(t *testing.T) {
	const p = "spec.source.image.ref"
	tests := []struct {
		ref        string
		wantDigest bool
		want       []fieldErr
	}{
		// Accepted: real-world references and the reference's examples.
		{ref: "quay.io/operatorhubio/catalog:latest"},
		{ref: "localhost:5000/a/b:v1"},
		{ref: "registry.io/x@sha256:" + hex64, wantDigest: true},
		{ref: "my-registry.io:8080/ns/img_name__x:1.0-rc.1"},
		{ref: "quay.io/operatorhubio/catalog@sha256:" + hex64, wantDigest: true},
		{ref: "registry.mydomain.io/my-catalog.prod:v4.16"},
		{ref: "Registry.MyDomain.IO/catalog:v1"},                                             // domain may be upper case
		{ref: "10.0.0.1:5000/catalog:v1"},                                                    // IP address with port
		{ref: "quay.io/a-b.c_d__e/f--g:v1"},                                                  // every name separator
		{ref: "quay.io/catalog:_V1.2-3"},                                                     // tag starts with '_', mixes case
		{ref: "quay.io/catalog:" + strings.Repeat("t", 127)},                                 // longest tag
		{ref: "quay.io/x@sha256:" + hex64[:32], wantDigest: true},                            // shortest digest
		{ref: "quay.io/x@multihash+base58:" + strings.ToUpper(hex64[:40]), wantDigest: true}, // algorithm with '+', upper-case hex
		{ref: "quay.io/x@sha256+b64u:" + hex64, wantDigest: true},
		{ref: "quay.io/x@sha256_v1.b-c2:" + hex64, wantDigest: true}, // algorithm separators _ . -
		{ref: refOfLength(1000)},                                     // longest ref

		// Rejected: empty and too long.
		{ref: "", want: []fieldErr{required(p)}},
		{ref: refOfLength(1001), want: []fieldErr{tooLong(p)}},
		// A ref must end in a tag or a digest.
		{ref: "quay.io/x", want: []fieldErr{invalid(p)}},
		{ref: "localhost:5000/a/b", want: []fieldErr{invalid(p)}}, // the port is not a tag
		{ref: "quay.io/x:", want: []fieldErr{invalid(p)}},
		// Domain.
		{ref: "catalog:latest", want: []fieldErr{invalid(p)}}, // no domain
		{ref: "-quay.io/x:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay-.io/x:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay..io/x:v1", want: []fieldErr{invalid(p)}},
		{ref: "my_registry.io/x:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io:/x:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io:80a/x:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io:80:81/x:v1", want: []fieldErr{invalid(p)}},
		{ref: "-bad/x", want: []fieldErr{invalid(p), invalid(p)}}, // bad domain and no tag: both reported
		// Name.
		{ref: "quay.io/:latest", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/Catalog:latest", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/a//b:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/a/:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/_a:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/a-:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/a___b:v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/a..b:v1", want: []fieldErr{invalid(p)}},
		// Tag: allowed set and at most 127 characters.
		{ref: "quay.io/x:.v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x:-v1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x:v1+build", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x:v 1", want: []fieldErr{invalid(p)}},
		{ref: "quay.io/catalog:" + strings.Repeat("t", 128), want: []fieldErr{invalid(p)}},
		// Digest: algorithm, ':' and at least 32 hex digits; tag and digest
		// together are not one of the reference's identifiers.
		{ref: "quay.io/x@sha256", wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@sha256:" + hex64[:31], wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@sha256:" + hex64[:63] + "g", wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@sha256:", wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@:" + hex64, wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@1sha:" + hex64, wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@sha256++b64:" + hex64, wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@sha256-:" + hex64, wantDigest: true, want: []fieldErr{invalid(p)}},
		// As in the reference's examples (sha256+b64u, multihash+base58),
		// each part after a separator starts with a letter.
		{ref: "quay.io/x@sha-256:" + hex64, wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x@sha256:" + hex64 + ":v1", wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io/x:v1@sha256:" + hex64, wantDigest: true, want: []fieldErr{invalid(p)}},
		{ref: "quay.io@sha256:" + hex64, wantDigest: true, want: []fieldErr{invalid(p)}}, // no name
	}
	for _, tc := range tests {
		name := tc.ref
		if len(name) > 60 {
			name = fmt.Sprintf("%s...(%d chars)", name[:40], len(tc.ref))
		}
		t.Run(name, func(t *testing.T) {
			errs, isDigest := ValidateImageRef(tc.ref, field.NewPath("spec", "source", "image", "ref"))
			expectErrors(t, errs, tc.want)
			if isDigest != tc.wantDigest {
				t.Errorf("isDigest = %v, want %v", isDigest, tc.wantDigest)
			}
		})
	}
}

func validCatalog() *olmv1.ClusterCatalog {
	return &olmv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: "operatorhubio", ResourceVersion: "1"},
		Spec: olmv1.ClusterCatalogSpec{
			Source: olmv1.CatalogSource{
				Type:  olmv1.SourceTypeImage,
				Image: &olmv1.ImageSource{Ref: "quay.io/operatorhubio/catalog:latest"},
			},
			AvailabilityMode: olmv1.AvailabilityModeAvailable,
		},
	}
}

// catalogSpecRows are the spec rules of ClusterCatalog, shared by the create
// and update tables (every spec field is mutable, so both apply them).
var catalogSpecRows = []struct {
	name   string
	mutate func(*olmv1.ClusterCatalog)
	want   []fieldErr
}{
	{name: "tag ref without polling", mutate: func(*olmv1.ClusterCatalog) {}},
	{name: "localhost ref with port", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.Ref = "localhost:5000/a/b:v1" }},
	{name: "ref with port and underscores", mutate: func(c *olmv1.ClusterCatalog) {
		c.Spec.Source.Image.Ref = "my-registry.io:8080/ns/img_name__x:1.0-rc.1"
	}},
	{name: "digest ref without polling", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.Ref = "registry.io/x@sha256:" + hex64 }},
	{name: "tag ref polled every minute", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.PollIntervalMinutes = intPtr(1) }},
	{name: "tag ref polled daily", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.PollIntervalMinutes = intPtr(1440) }},
	{name: "availabilityMode Unavailable", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.AvailabilityMode = olmv1.AvailabilityModeUnavailable }},
	{name: "lowest priority", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Priority = -2147483648 }},
	{name: "highest priority", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Priority = 2147483647 }},

	{name: "ref without tag or digest", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.Ref = "quay.io/x" },
		want: []fieldErr{invalid("spec.source.image.ref")}},
	{name: "ref empty", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.Ref = "" },
		want: []fieldErr{required("spec.source.image.ref")}},
	{name: "ref over 1000 characters", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.Ref = refOfLength(1001) },
		want: []fieldErr{tooLong("spec.source.image.ref")}},
	{name: "digest ref polled every 5 minutes", mutate: func(c *olmv1.ClusterCatalog) {
		c.Spec.Source.Image.Ref = "registry.io/x@sha256:" + hex64
		c.Spec.Source.Image.PollIntervalMinutes = intPtr(5)
	}, want: []fieldErr{forbidden("spec.source.image.pollIntervalMinutes")}},
	{name: "invalid digest ref polled", mutate: func(c *olmv1.ClusterCatalog) {
		c.Spec.Source.Image.Ref = "registry.io/x@sha256:abc"
		c.Spec.Source.Image.PollIntervalMinutes = intPtr(5)
	}, want: []fieldErr{invalid("spec.source.image.ref"), forbidden("spec.source.image.pollIntervalMinutes")}},
	{name: "poll interval 0", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.PollIntervalMinutes = intPtr(0) },
		want: []fieldErr{invalid("spec.source.image.pollIntervalMinutes")}},
	{name: "poll interval negative", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image.PollIntervalMinutes = intPtr(-5) },
		want: []fieldErr{invalid("spec.source.image.pollIntervalMinutes")}},
	{name: "digest ref with poll interval 0", mutate: func(c *olmv1.ClusterCatalog) {
		c.Spec.Source.Image.Ref = "registry.io/x@sha256:" + hex64
		c.Spec.Source.Image.PollIntervalMinutes = intPtr(0)
	}, want: []fieldErr{invalid("spec.source.image.pollIntervalMinutes"), forbidden("spec.source.image.pollIntervalMinutes")}},
	{name: "type Image without image", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Image = nil },
		want: []fieldErr{required("spec.source.image")}},
	{name: "type missing without image", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source = olmv1.CatalogSource{} },
		want: []fieldErr{required("spec.source.type")}},
	{name: "type missing with image", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Type = "" },
		want: []fieldErr{required("spec.source.type"), forbidden("spec.source.image")}},
	{name: "unknown type with image", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Type = "Git" },
		want: []fieldErr{notSupported("spec.source.type"), forbidden("spec.source.image")}},
	{name: "unknown type without image", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source = olmv1.CatalogSource{Type: "Git"} },
		want: []fieldErr{notSupported("spec.source.type")}},
	{name: "type in wrong case", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.Source.Type = "image" },
		want: []fieldErr{notSupported("spec.source.type"), forbidden("spec.source.image")}},
	{name: "unknown availabilityMode", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.AvailabilityMode = "Sometimes" },
		want: []fieldErr{notSupported("spec.availabilityMode")}},
	{name: "availabilityMode in wrong case", mutate: func(c *olmv1.ClusterCatalog) { c.Spec.AvailabilityMode = "available" },
		want: []fieldErr{notSupported("spec.availabilityMode")}},
}

func TestValidateClusterCatalog(t *testing.T) {
	tests := append(append([]struct {
		name   string
		mutate func(*olmv1.ClusterCatalog)
		want   []fieldErr
	}{}, catalogSpecRows...), []struct {
		name   string
		mutate func(*olmv1.ClusterCatalog)
		want   []fieldErr
	}{
		{name: "name label set", mutate: func(c *olmv1.ClusterCatalog) {
			c.Labels = map[string]string{olmv1.MetadataNameLabel: c.Name}
		}},
		{name: "name not a DNS subdomain", mutate: func(c *olmv1.ClusterCatalog) { c.Name = "Bad_Name" },
			want: []fieldErr{invalid("metadata.name")}},
		{name: "name missing", mutate: func(c *olmv1.ClusterCatalog) { c.Name = "" },
			want: []fieldErr{required("metadata.name")}},
		{name: "namespaced", mutate: func(c *olmv1.ClusterCatalog) { c.Namespace = "default" },
			want: []fieldErr{forbidden("metadata.namespace")}},
		{name: "errors in metadata and spec together", mutate: func(c *olmv1.ClusterCatalog) {
			c.Name = "Bad_Name"
			c.Spec.Source.Image.Ref = "quay.io/x"
		}, want: []fieldErr{invalid("metadata.name"), invalid("spec.source.image.ref")}},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc := validCatalog()
			tc.mutate(cc)
			expectErrors(t, ValidateClusterCatalog(cc), tc.want)
		})
	}
}

func TestValidateClusterCatalogUpdate(t *testing.T) {
	tests := append(append([]struct {
		name   string
		mutate func(*olmv1.ClusterCatalog)
		want   []fieldErr
	}{}, catalogSpecRows...), []struct {
		name   string
		mutate func(*olmv1.ClusterCatalog)
		want   []fieldErr
	}{
		{name: "switch tag to digest and drop polling", mutate: func(c *olmv1.ClusterCatalog) {
			c.Spec.Source.Image = &olmv1.ImageSource{Ref: "quay.io/operatorhubio/catalog@sha256:" + hex64}
		}},
		{name: "labels change", mutate: func(c *olmv1.ClusterCatalog) { c.Labels = map[string]string{"team": "a"} }},
		{name: "rename", mutate: func(c *olmv1.ClusterCatalog) { c.Name = "other" },
			want: []fieldErr{invalid("metadata.name")}},
		{name: "no resourceVersion", mutate: func(c *olmv1.ClusterCatalog) { c.ResourceVersion = "" },
			want: []fieldErr{invalid("metadata.resourceVersion")}},
		{name: "invalid label", mutate: func(c *olmv1.ClusterCatalog) { c.Labels = map[string]string{"bad key": "a"} },
			want: []fieldErr{invalid("metadata.labels")}},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validCatalog()
			old.Spec.Source.Image.PollIntervalMinutes = intPtr(10)
			cc := validCatalog()
			tc.mutate(cc)
			expectErrors(t, ValidateClusterCatalogUpdate(cc, old), tc.want)
		})
	}
}

func TestValidateClusterCatalogStatusUpdate(t *testing.T) {
	digestRef := "quay.io/operatorhubio/catalog@sha256:" + hex64
	served := func(c *olmv1.ClusterCatalog) {
		c.Status = olmv1.ClusterCatalogStatus{
			Conditions: []metav1.Condition{
				condition(olmv1.TypeServing, metav1.ConditionTrue, olmv1.ReasonAvailable),
				condition(olmv1.TypeProgressing, metav1.ConditionTrue, olmv1.ReasonSucceeded),
			},
			ResolvedSource: &olmv1.ResolvedCatalogSource{Type: olmv1.SourceTypeImage, Image: &olmv1.ResolvedImageSource{Ref: digestRef}},
			URLs:           &olmv1.ClusterCatalogURLs{Base: "https://catalogd-service.olmv1-system.svc/catalogs/operatorhubio"},
			LastUnpacked:   &transitionTime,
		}
	}
	tests := []struct {
		name   string
		mutate func(*olmv1.ClusterCatalog)
		want   []fieldErr
	}{
		{name: "empty status", mutate: func(*olmv1.ClusterCatalog) {}},
		{name: "served catalog", mutate: served},
		{name: "blocked, not served", mutate: func(c *olmv1.ClusterCatalog) {
			c.Status.Conditions = []metav1.Condition{
				condition(olmv1.TypeServing, metav1.ConditionFalse, olmv1.ReasonUserSpecifiedUnavailable),
				condition(olmv1.TypeProgressing, metav1.ConditionFalse, olmv1.ReasonBlocked),
			}
		}},
		{name: "http base URL", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = "http://localhost:8443/apis/olm.operatorframework.io/v1/clustercatalogs/operatorhubio/content"
		}},
		{name: "base URL of 525 characters", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = urlOfLength(525)
		}},
		{name: "resolved ref of 1000 characters", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.ResolvedSource.Image.Ref = refOfLength(1000)
		}},

		{name: "base URL missing", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = ""
		}, want: []fieldErr{required("status.urls.base")}},
		{name: "base URL over 525 characters", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = urlOfLength(526)
		}, want: []fieldErr{tooLong("status.urls.base")}},
		{name: "base URL ftp", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = "ftp://catalogd.svc/catalogs/x"
		}, want: []fieldErr{invalid("status.urls.base")}},
		{name: "base URL without scheme", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = "catalogd.svc/catalogs/x"
		}, want: []fieldErr{invalid("status.urls.base")}},
		{name: "base URL without host", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = "https:///catalogs/x"
		}, want: []fieldErr{invalid("status.urls.base")}},
		{name: "base URL unparsable", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.URLs.Base = "http://[::1"
		}, want: []fieldErr{invalid("status.urls.base")}},
		{name: "resolved type missing", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.ResolvedSource.Type = ""
		}, want: []fieldErr{required("status.resolvedSource.type"), forbidden("status.resolvedSource.image")}},
		{name: "resolved type Image without image", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.ResolvedSource.Image = nil
		}, want: []fieldErr{required("status.resolvedSource.image")}},
		{name: "resolved type unknown", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.ResolvedSource = &olmv1.ResolvedCatalogSource{Type: "Git"}
		}, want: []fieldErr{notSupported("status.resolvedSource.type")}},
		{name: "resolved ref missing", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.ResolvedSource.Image.Ref = ""
		}, want: []fieldErr{required("status.resolvedSource.image.ref")}},
		{name: "resolved ref over 1000 characters", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.ResolvedSource.Image.Ref = refOfLength(1001)
		}, want: []fieldErr{tooLong("status.resolvedSource.image.ref")}},
		{name: "condition status not True/False/Unknown", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.Conditions[0].Status = "Maybe"
		}, want: []fieldErr{notSupported("status.conditions[0].status")}},
		{name: "condition without reason", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.Conditions[1].Reason = ""
		}, want: []fieldErr{required("status.conditions[1].reason")}},
		{name: "condition type twice", mutate: func(c *olmv1.ClusterCatalog) {
			served(c)
			c.Status.Conditions[1].Type = olmv1.TypeServing
		}, want: []fieldErr{duplicate("status.conditions[1]")}},
		{name: "rename through status", mutate: func(c *olmv1.ClusterCatalog) { c.Name = "other" },
			want: []fieldErr{invalid("metadata.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validCatalog()
			cc := validCatalog()
			tc.mutate(cc)
			expectErrors(t, ValidateClusterCatalogStatusUpdate(cc, old), tc.want)
		})
	}
}

func validExtension() *olmv1.ClusterExtension {
	return &olmv1.ClusterExtension{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd", ResourceVersion: "1"},
		Spec: olmv1.ClusterExtensionSpec{
			Namespace: "argocd",
			Source: olmv1.SourceConfig{
				SourceType: olmv1.SourceTypeCatalog,
				Catalog: &olmv1.CatalogFilter{
					PackageName:             "argocd-operator",
					UpgradeConstraintPolicy: olmv1.UpgradeConstraintPolicyCatalogProvided,
				},
			},
		},
	}
}

func channelsN(n int) []string {
	chs := make([]string, n)
	for i := range chs {
		chs[i] = fmt.Sprintf("channel-%d", i)
	}
	return chs
}

func setVersion(v string) func(*olmv1.ClusterExtension) {
	return func(e *olmv1.ClusterExtension) { e.Spec.Source.Catalog.Version = v }
}

func setChannels(chs ...string) func(*olmv1.ClusterExtension) {
	return func(e *olmv1.ClusterExtension) { e.Spec.Source.Catalog.Channels = chs }
}

func setPackage(name string) func(*olmv1.ClusterExtension) {
	return func(e *olmv1.ClusterExtension) { e.Spec.Source.Catalog.PackageName = name }
}

func setNamespace(ns string) func(*olmv1.ClusterExtension) {
	return func(e *olmv1.ClusterExtension) { e.Spec.Namespace = ns }
}

func setInline(raw string) func(*olmv1.ClusterExtension) {
	return func(e *olmv1.ClusterExtension) {
		e.Spec.Config = &olmv1.ClusterExtensionConfig{ConfigType: olmv1.ClusterExtensionConfigTypeInline, Inline: &olmv1.JSON{Raw: []byte(raw)}}
	}
}

func setDeadline(m int32) func(*olmv1.ClusterExtension) {
	return func(e *olmv1.ClusterExtension) { e.Spec.ProgressDeadlineMinutes = m }
}

func setEnforcement(e olmv1.CRDUpgradeSafetyEnforcement) func(*olmv1.ClusterExtension) {
	return func(ce *olmv1.ClusterExtension) {
		ce.Spec.Install = &olmv1.ClusterExtensionInstallConfig{Preflight: &olmv1.PreflightConfig{
			CRDUpgradeSafety: &olmv1.CRDUpgradeSafetyPreflightConfig{Enforcement: e}}}
	}
}

// version64 is a valid version range of exactly 64 characters.
var version64 = "1.0.0-" + strings.Repeat("a", 58)

// extensionSpecRows are the spec rules of ClusterExtension, shared by the
// create and update tables (an update must pass them too).
var extensionSpecRows = []struct {
	name   string
	mutate func(*olmv1.ClusterExtension)
	want   []fieldErr
}{
	{name: "minimal", mutate: func(*olmv1.ClusterExtension) {}},

	// namespace: DNS-1123 label, at most 63 characters.
	{name: "namespace of 63 characters", mutate: setNamespace(strings.Repeat("n", 63))},
	{name: "namespace single character", mutate: setNamespace("a")},
	{name: "namespace starting with digit", mutate: setNamespace("123-abc")},
	{name: "namespace Bad_NS", mutate: setNamespace("Bad_NS"), want: []fieldErr{invalid("spec.namespace")}},
	{name: "namespace missing", mutate: setNamespace(""), want: []fieldErr{required("spec.namespace")}},
	{name: "namespace of 64 characters", mutate: setNamespace(strings.Repeat("n", 64)), want: []fieldErr{tooLong("spec.namespace")}},
	{name: "namespace with dot", mutate: setNamespace("argo.cd"), want: []fieldErr{invalid("spec.namespace")}},
	{name: "namespace starting with hyphen", mutate: setNamespace("-argocd"), want: []fieldErr{invalid("spec.namespace")}},
	{name: "namespace ending with hyphen", mutate: setNamespace("argocd-"), want: []fieldErr{invalid("spec.namespace")}},

	// serviceAccount: deprecated, ignored, but an object with a valid name.
	{name: "serviceAccount name", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.ServiceAccount = &olmv1.ServiceAccountReference{Name: "some.serviceaccount"}
	}},
	{name: "serviceAccount empty object", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.ServiceAccount = &olmv1.ServiceAccountReference{}
	}, want: []fieldErr{required("spec.serviceAccount.name")}},
	{name: "serviceAccount name not a DNS subdomain", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.ServiceAccount = &olmv1.ServiceAccountReference{Name: "-some-serviceaccount"}
	}, want: []fieldErr{invalid("spec.serviceAccount.name")}},
	{name: "serviceAccount name over 253 characters", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.ServiceAccount = &olmv1.ServiceAccountReference{Name: dnsSubdomain(254)}
	}, want: []fieldErr{tooLong("spec.serviceAccount.name")}},

	// source union: catalog iff sourceType Catalog.
	{name: "sourceType Catalog without catalog", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Source.Catalog = nil },
		want: []fieldErr{required("spec.source.catalog")}},
	{name: "sourceType missing with catalog", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Source.SourceType = "" },
		want: []fieldErr{required("spec.source.sourceType"), forbidden("spec.source.catalog")}},
	{name: "sourceType missing without catalog", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Source = olmv1.SourceConfig{} },
		want: []fieldErr{required("spec.source.sourceType")}},
	{name: "sourceType unknown with catalog", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Source.SourceType = "Bundle" },
		want: []fieldErr{notSupported("spec.source.sourceType"), forbidden("spec.source.catalog")}},
	{name: "sourceType unknown without catalog", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Source = olmv1.SourceConfig{SourceType: "Bundle"} },
		want: []fieldErr{notSupported("spec.source.sourceType")}},

	// packageName: DNS-1123 subdomain, at most 253 characters.
	{name: "packageName some-package", mutate: setPackage("some-package")},
	{name: "packageName 123-package", mutate: setPackage("123-package")},
	{name: "packageName 1-package-2", mutate: setPackage("1-package-2")},
	// The reference lists some.package among invalid examples, but its rule
	// (DNS-1123 subdomain: lowercase alphanumerics, '-' or '.') allows dots.
	{name: "packageName with dot", mutate: setPackage("some.package")},
	{name: "packageName of 253 characters", mutate: setPackage(dnsSubdomain(253))},
	{name: "packageName missing", mutate: setPackage(""), want: []fieldErr{required("spec.source.catalog.packageName")}},
	{name: "packageName of 300 characters", mutate: setPackage(strings.Repeat("p", 300)), want: []fieldErr{tooLong("spec.source.catalog.packageName")}},
	{name: "packageName of 254 characters", mutate: setPackage(dnsSubdomain(254)), want: []fieldErr{tooLong("spec.source.catalog.packageName")}},
	{name: "packageName starting with hyphen", mutate: setPackage("-some-package"), want: []fieldErr{invalid("spec.source.catalog.packageName")}},
	{name: "packageName ending with hyphen", mutate: setPackage("some-package-"), want: []fieldErr{invalid("spec.source.catalog.packageName")}},
	{name: "packageName upper case and underscore", mutate: setPackage("Some_Package"), want: []fieldErr{invalid("spec.source.catalog.packageName")}},

	// version: at most 64 characters, the documented range grammar.
	{name: "version pinned", mutate: setVersion("0.6.0")},
	{name: "version comma range", mutate: setVersion(">=3.0, <3.6")},
	{name: "version space range", mutate: setVersion(">=1.0.0 <2.0.0")},
	{name: "version operator then space", mutate: setVersion(">= 1.2.x")},
	{name: "version wildcard x", mutate: setVersion("1.2.x")},
	{name: "version wildcard X", mutate: setVersion("1.2.X")},
	{name: "version wildcard star", mutate: setVersion("1.2.*")},
	{name: "version wildcard alone", mutate: setVersion("*")},
	{name: "version less-equal wildcard", mutate: setVersion("<= 2.x")},
	{name: "version not equal", mutate: setVersion("!=1.2.3")},
	{name: "version tilde", mutate: setVersion("~1.2.3")},
	{name: "version caret", mutate: setVersion("^1.2.3")},
	{name: "version caret zero", mutate: setVersion("^0.0")},
	{name: "version OR of ranges", mutate: setVersion(">=1.2.3, <2.0.0 || >3.0.0")},
	{name: "version OR of carets", mutate: setVersion("^0 || ^3 || ^5")},
	{name: "version pre-release range", mutate: setVersion(">=1.16.0-0 <1.17.0")},
	{name: "version with build metadata", mutate: setVersion("1.0.0+2")},
	{name: "version of 64 characters", mutate: setVersion(version64)},
	{name: "version hyphen range", mutate: setVersion("1.2.3 - 2.3.4"), want: []fieldErr{invalid("spec.source.catalog.version")}},
	{name: "version with &&", mutate: setVersion(">=1.0.0 && <2.0.0"), want: []fieldErr{invalid("spec.source.catalog.version")}},
	{name: "version of 65 characters", mutate: setVersion(version64 + "a"), want: []fieldErr{tooLong("spec.source.catalog.version")}},
	{name: "version blank", mutate: setVersion("   "), want: []fieldErr{invalid("spec.source.catalog.version")}},
	{name: "version word", mutate: setVersion("latest"), want: []fieldErr{invalid("spec.source.catalog.version")}},
	{name: "version empty OR alternative", mutate: setVersion(">=1.0.0 ||"), want: []fieldErr{invalid("spec.source.catalog.version")}},
	{name: "version leading zero", mutate: setVersion("01.2.3"), want: []fieldErr{invalid("spec.source.catalog.version")}},
	{name: "version unknown operator", mutate: setVersion("=>1.2.3"), want: []fieldErr{invalid("spec.source.catalog.version")}},

	// channels: at most 256, each a DNS-1123 subdomain.
	{name: "channels from the reference", mutate: setChannels("1.1.x", "alpha", "stable", "stable-v1", "v1-stable", "dev-preview", "preview", "community")},
	{name: "256 channels", mutate: setChannels(channelsN(256)...)},
	{name: "channel of 253 characters", mutate: setChannels(dnsSubdomain(253))},
	{name: "channel -bad", mutate: setChannels("-bad"), want: []fieldErr{invalid("spec.source.catalog.channels[0]")}},
	{name: "second channel original_40", mutate: setChannels("stable", "original_40"), want: []fieldErr{invalid("spec.source.catalog.channels[1]")}},
	{name: "channel some-channel-", mutate: setChannels("some-channel-"), want: []fieldErr{invalid("spec.source.catalog.channels[0]")}},
	{name: "channel --default-channel", mutate: setChannels("--default-channel"), want: []fieldErr{invalid("spec.source.catalog.channels[0]")}},
	{name: "channel upper case", mutate: setChannels("Stable"), want: []fieldErr{invalid("spec.source.catalog.channels[0]")}},
	{name: "channel empty", mutate: setChannels(""), want: []fieldErr{required("spec.source.catalog.channels[0]")}},
	{name: "channel of 254 characters", mutate: setChannels(dnsSubdomain(254)), want: []fieldErr{tooLong("spec.source.catalog.channels[0]")}},
	{name: "257 channels", mutate: setChannels(channelsN(257)...), want: []fieldErr{tooMany("spec.source.catalog.channels")}},
	{name: "257 channels one bad", mutate: func(e *olmv1.ClusterExtension) {
		chs := channelsN(257)
		chs[256] = "-bad"
		e.Spec.Source.Catalog.Channels = chs
	}, want: []fieldErr{tooMany("spec.source.catalog.channels"), invalid("spec.source.catalog.channels[256]")}},

	// selector: a valid label selector.
	{name: "selector by catalog name", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{olmv1.MetadataNameLabel: "operatorhubio"}}
	}},
	{name: "selector expressions", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: olmv1.MetadataNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"beta"}},
			{Key: "team", Operator: metav1.LabelSelectorOpExists},
		}}
	}},
	{name: "selector empty (all catalogs)", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{} }},
	{name: "selector bad label key", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key": "x"}}
	}, want: []fieldErr{invalid("spec.source.catalog.selector.matchLabels")}},
	{name: "selector bad label value", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "-x-"}}
	}, want: []fieldErr{invalid("spec.source.catalog.selector.matchLabels")}},
	{name: "selector unknown operator", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: "Maybe", Values: []string{"a"}}}}
	}, want: []fieldErr{invalid("spec.source.catalog.selector.matchExpressions[0].operator")}},
	{name: "selector In without values", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpIn}}}
	}, want: []fieldErr{required("spec.source.catalog.selector.matchExpressions[0].values")}},
	{name: "selector Exists with values", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpExists, Values: []string{"a"}}}}
	}, want: []fieldErr{forbidden("spec.source.catalog.selector.matchExpressions[0].values")}},

	// upgradeConstraintPolicy enum.
	{name: "upgradeConstraintPolicy SelfCertified", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.UpgradeConstraintPolicy = olmv1.UpgradeConstraintPolicySelfCertified
	}},
	{name: "upgradeConstraintPolicy unknown", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Source.Catalog.UpgradeConstraintPolicy = "Anything"
	}, want: []fieldErr{notSupported("spec.source.catalog.upgradeConstraintPolicy")}},

	// install: preflight required in install, crdUpgradeSafety in preflight; enforcement enum.
	{name: "enforcement Strict", mutate: setEnforcement(olmv1.CRDUpgradeSafetyEnforcementStrict)},
	{name: "enforcement None", mutate: setEnforcement(olmv1.CRDUpgradeSafetyEnforcementNone)},
	{name: "enforcement unknown", mutate: setEnforcement("Lenient"),
		want: []fieldErr{notSupported("spec.install.preflight.crdUpgradeSafety.enforcement")}},
	{name: "install without preflight", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Install = &olmv1.ClusterExtensionInstallConfig{} },
		want: []fieldErr{required("spec.install.preflight")}},
	{name: "preflight without crdUpgradeSafety", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Install = &olmv1.ClusterExtensionInstallConfig{Preflight: &olmv1.PreflightConfig{}}
	}, want: []fieldErr{required("spec.install.preflight.crdUpgradeSafety")}},

	// config union: inline iff configType Inline; inline an object with >= 1 property.
	{name: "inline config", mutate: setInline(`{"watchNamespace":"argocd-watch"}`)},
	{name: "inline nested config", mutate: setInline(`{"deploymentConfig": {"env": [{"name": "A", "value": "1"}]}}`)},
	{name: "inline missing", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Config = &olmv1.ClusterExtensionConfig{ConfigType: olmv1.ClusterExtensionConfigTypeInline}
	}, want: []fieldErr{required("spec.config.inline")}},
	{name: "inline empty raw", mutate: setInline(""), want: []fieldErr{required("spec.config.inline")}},
	{name: "inline empty object", mutate: setInline(`{}`), want: []fieldErr{invalid("spec.config.inline")}},
	{name: "inline array", mutate: setInline(`[{"a":1}]`), want: []fieldErr{invalid("spec.config.inline")}},
	{name: "inline string", mutate: setInline(`"watchNamespace"`), want: []fieldErr{invalid("spec.config.inline")}},
	{name: "inline null", mutate: setInline(`null`), want: []fieldErr{invalid("spec.config.inline")}},
	{name: "inline not JSON", mutate: setInline(`{watchNamespace`), want: []fieldErr{invalid("spec.config.inline")}},
	{name: "configType missing with inline", mutate: func(e *olmv1.ClusterExtension) {
		setInline(`{"a":1}`)(e)
		e.Spec.Config.ConfigType = ""
	}, want: []fieldErr{required("spec.config.configType"), forbidden("spec.config.inline")}},
	{name: "configType missing without inline", mutate: func(e *olmv1.ClusterExtension) { e.Spec.Config = &olmv1.ClusterExtensionConfig{} },
		want: []fieldErr{required("spec.config.configType")}},
	{name: "configType unknown with inline", mutate: func(e *olmv1.ClusterExtension) {
		setInline(`{"a":1}`)(e)
		e.Spec.Config.ConfigType = "Secret"
	}, want: []fieldErr{notSupported("spec.config.configType"), forbidden("spec.config.inline")}},
	{name: "configType unknown without inline", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Config = &olmv1.ClusterExtensionConfig{ConfigType: "Secret"}
	}, want: []fieldErr{notSupported("spec.config.configType")}},

	// progressDeadlineMinutes: 10 to 720, 0 meaning unset.
	{name: "progressDeadlineMinutes unset", mutate: setDeadline(0)},
	{name: "progressDeadlineMinutes 10", mutate: setDeadline(10)},
	{name: "progressDeadlineMinutes 720", mutate: setDeadline(720)},
	{name: "progressDeadlineMinutes 5", mutate: setDeadline(5), want: []fieldErr{invalid("spec.progressDeadlineMinutes")}},
	{name: "progressDeadlineMinutes 9", mutate: setDeadline(9), want: []fieldErr{invalid("spec.progressDeadlineMinutes")}},
	{name: "progressDeadlineMinutes 721", mutate: setDeadline(721), want: []fieldErr{invalid("spec.progressDeadlineMinutes")}},
	{name: "progressDeadlineMinutes negative", mutate: setDeadline(-1), want: []fieldErr{invalid("spec.progressDeadlineMinutes")}},

	{name: "errors in several fields", mutate: func(e *olmv1.ClusterExtension) {
		e.Spec.Namespace = "Bad_NS"
		e.Spec.Source.Catalog.Version = "1.2.3 - 2.3.4"
		e.Spec.ProgressDeadlineMinutes = 5
	}, want: []fieldErr{invalid("spec.namespace"), invalid("spec.source.catalog.version"), invalid("spec.progressDeadlineMinutes")}},
}

func TestValidateClusterExtension(t *testing.T) {
	tests := append(append([]struct {
		name   string
		mutate func(*olmv1.ClusterExtension)
		want   []fieldErr
	}{}, extensionSpecRows...), []struct {
		name   string
		mutate func(*olmv1.ClusterExtension)
		want   []fieldErr
	}{
		{name: "name not a DNS subdomain", mutate: func(e *olmv1.ClusterExtension) { e.Name = "Bad_Name" },
			want: []fieldErr{invalid("metadata.name")}},
		{name: "namespaced", mutate: func(e *olmv1.ClusterExtension) { e.Namespace = "default" },
			want: []fieldErr{forbidden("metadata.namespace")}},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ce := validExtension()
			tc.mutate(ce)
			expectErrors(t, ValidateClusterExtension(ce), tc.want)
		})
	}
}

// TestValidateClusterExtensionVersionAgreesWithParser checks that admission
// accepts a version exactly when versionrange.Parse (the resolver's parser)
// does, so that admission and resolution never disagree.
func TestValidateClusterExtensionVersionAgreesWithParser(t *testing.T) {
	for _, v := range []string{
		"1.2.3", ">=1.0.0, <2.0.0", ">=1.0.0 <2.0.0", "1.2.x", "~1", "^2.x", "x", "v1.2.3", "=1.2.3",
		">=1.2.3, <2.0.0 || >3.0.0", ">=1.16.0-0 <1.17.0", version64, " 1.2.3 ",
		"1.2.3 - 2.3.4", ">=1.0.0 && <2.0.0", "latest", ">=", "1.2.3.4", "|| 1.0.0", "1.0.0 ||| 2.0.0",
		">=1.0.0,,<2.0.0", "~>1.2", "1.2.3-", "1.2.3+", version64 + "a",
	} {
		t.Run(v, func(t *testing.T) {
			ce := validExtension()
			ce.Spec.Source.Catalog.Version = v
			var versionErrs field.ErrorList
			for _, e := range ValidateClusterExtension(ce) {
				if e.Field != "spec.source.catalog.version" {
					t.Fatalf("unexpected error on another field: %v", e)
				}
				versionErrs = append(versionErrs, e)
			}
			_, parseErr := versionrange.Parse(v)
			if (parseErr == nil) != (len(versionErrs) == 0) {
				t.Fatalf("versionrange.Parse error = %v but admission errors = %v", parseErr, versionErrs)
			}
		})
	}
}

func TestValidateClusterExtensionUpdate(t *testing.T) {
	type row struct {
		name   string
		mutate func(*olmv1.ClusterExtension)
		want   []fieldErr
	}
	var tests []row
	// The spec rules apply on update too. A shared row that changes
	// namespace or packageName also changes an immutable field, which adds
	// its own error to the row's.
	for _, r := range extensionSpecRows {
		ce, old := validExtension(), validExtension()
		r.mutate(ce)
		want := append([]fieldErr(nil), r.want...)
		if ce.Spec.Namespace != old.Spec.Namespace {
			want = append(want, invalid("spec.namespace"))
		}
		if c := ce.Spec.Source.Catalog; c != nil && c.PackageName != old.Spec.Source.Catalog.PackageName {
			want = append(want, invalid("spec.source.catalog.packageName"))
		}
		tests = append(tests, row{name: "spec rule/" + r.name, mutate: r.mutate, want: want})
	}
	tests = append(tests, []row{
		{name: "change version, channels and policy", mutate: func(e *olmv1.ClusterExtension) {
			e.Spec.Source.Catalog.Version = ">=0.7.0"
			e.Spec.Source.Catalog.Channels = []string{"alpha"}
			e.Spec.Source.Catalog.UpgradeConstraintPolicy = olmv1.UpgradeConstraintPolicySelfCertified
		}},
		{name: "add install, config and deadline", mutate: func(e *olmv1.ClusterExtension) {
			setEnforcement(olmv1.CRDUpgradeSafetyEnforcementNone)(e)
			setInline(`{"watchNamespace":"x"}`)(e)
			e.Spec.ProgressDeadlineMinutes = 30
		}},
		{name: "change packageName", mutate: setPackage("argocd-operator-2"),
			want: []fieldErr{invalid("spec.source.catalog.packageName")}},
		{name: "change namespace", mutate: setNamespace("argocd-2"),
			want: []fieldErr{invalid("spec.namespace")}},
		{name: "change namespace and packageName", mutate: func(e *olmv1.ClusterExtension) {
			e.Spec.Namespace = "other"
			e.Spec.Source.Catalog.PackageName = "other"
		}, want: []fieldErr{invalid("spec.namespace"), invalid("spec.source.catalog.packageName")}},
		{name: "change packageName to an invalid one", mutate: setPackage("Bad_Pkg"),
			want: []fieldErr{invalid("spec.source.catalog.packageName"), invalid("spec.source.catalog.packageName")}},
		{name: "rename", mutate: func(e *olmv1.ClusterExtension) { e.Name = "other" },
			want: []fieldErr{invalid("metadata.name")}},
		{name: "no resourceVersion", mutate: func(e *olmv1.ClusterExtension) { e.ResourceVersion = "" },
			want: []fieldErr{invalid("metadata.resourceVersion")}},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validExtension()
			ce := validExtension()
			tc.mutate(ce)
			expectErrors(t, ValidateClusterExtensionUpdate(ce, old), tc.want)
		})
	}
}

func TestValidateClusterExtensionStatusUpdate(t *testing.T) {
	installed := func(e *olmv1.ClusterExtension) {
		e.Status = olmv1.ClusterExtensionStatus{
			Conditions: []metav1.Condition{
				condition(olmv1.TypeInstalled, metav1.ConditionTrue, olmv1.ReasonSucceeded),
				condition(olmv1.TypeProgressing, metav1.ConditionTrue, olmv1.ReasonSucceeded),
				condition(olmv1.TypeDeprecated, metav1.ConditionFalse, olmv1.ReasonNotDeprecated),
				condition(olmv1.TypeBundleDeprecated, metav1.ConditionUnknown, olmv1.ReasonAbsent),
			},
			Install: &olmv1.ClusterExtensionInstallStatus{Bundle: olmv1.BundleMetadata{Name: "argocd-operator.v0.6.0", Version: "0.6.0"}},
			ActiveRevisions: []olmv1.RevisionStatus{
				{Name: "argocd-1"},
				{Name: "argocd-2", Conditions: []metav1.Condition{condition("Available", metav1.ConditionFalse, "Rollout")}},
			},
		}
	}
	bundle := func(f func(b *olmv1.BundleMetadata)) func(*olmv1.ClusterExtension) {
		return func(e *olmv1.ClusterExtension) {
			installed(e)
			f(&e.Status.Install.Bundle)
		}
	}
	tests := []struct {
		name   string
		mutate func(*olmv1.ClusterExtension)
		want   []fieldErr
	}{
		{name: "empty status", mutate: func(*olmv1.ClusterExtension) {}},
		{name: "installed", mutate: installed},
		{name: "version with build metadata and release", mutate: bundle(func(b *olmv1.BundleMetadata) {
			b.Version, b.Release = "1.0.0+2", "2"
		})},
		{name: "pre-release version", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Version = "1.16.23-cee.1" })},
		{name: "release of 20 characters", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Release = "3.alpha.1." + strings.Repeat("1", 10) })},
		{name: "bundle name of 253 characters", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Name = dnsSubdomain(253) })},

		{name: "bundle name missing", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Name = "" }),
			want: []fieldErr{required("status.install.bundle.name")}},
		{name: "bundle name not a DNS subdomain", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Name = "Argocd_Operator" }),
			want: []fieldErr{invalid("status.install.bundle.name")}},
		{name: "bundle name over 253 characters", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Name = dnsSubdomain(254) }),
			want: []fieldErr{tooLong("status.install.bundle.name")}},
		{name: "bundle version missing", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Version = "" }),
			want: []fieldErr{required("status.install.bundle.version")}},
		{name: "bundle version with v prefix", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Version = "v0.6.0" }),
			want: []fieldErr{invalid("status.install.bundle.version")}},
		{name: "bundle version two parts", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Version = "0.6" }),
			want: []fieldErr{invalid("status.install.bundle.version")}},
		{name: "bundle version a range", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Version = ">=0.6.0" }),
			want: []fieldErr{invalid("status.install.bundle.version")}},
		{name: "release over 20 characters", mutate: bundle(func(b *olmv1.BundleMetadata) { b.Release = strings.Repeat("1", 21) }),
			want: []fieldErr{tooLong("status.install.bundle.release")}},
		{name: "revision name missing", mutate: func(e *olmv1.ClusterExtension) {
			installed(e)
			e.Status.ActiveRevisions[0].Name = ""
		}, want: []fieldErr{required("status.activeRevisions[0].name")}},
		{name: "revision name twice", mutate: func(e *olmv1.ClusterExtension) {
			installed(e)
			e.Status.ActiveRevisions[1].Name = "argocd-1"
		}, want: []fieldErr{duplicate("status.activeRevisions[1].name")}},
		{name: "revision condition status invalid", mutate: func(e *olmv1.ClusterExtension) {
			installed(e)
			e.Status.ActiveRevisions[1].Conditions[0].Status = "Maybe"
		}, want: []fieldErr{notSupported("status.activeRevisions[1].conditions[0].status")}},
		{name: "condition without lastTransitionTime", mutate: func(e *olmv1.ClusterExtension) {
			installed(e)
			e.Status.Conditions[2].LastTransitionTime = metav1.Time{}
		}, want: []fieldErr{required("status.conditions[2].lastTransitionTime")}},
		{name: "condition reason malformed", mutate: func(e *olmv1.ClusterExtension) {
			installed(e)
			e.Status.Conditions[0].Reason = "not a reason"
		}, want: []fieldErr{invalid("status.conditions[0].reason")}},
		{name: "rename through status", mutate: func(e *olmv1.ClusterExtension) { e.Name = "other" },
			want: []fieldErr{invalid("metadata.name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := validExtension()
			ce := validExtension()
			tc.mutate(ce)
			expectErrors(t, ValidateClusterExtensionStatusUpdate(ce, old), tc.want)
		})
	}
}

// TestFixtureLengths guards the limit rows above: a fixture one character
// off would test the wrong side of a limit.
func TestFixtureLengths(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  string
		want int
	}{
		{"dnsSubdomain(253)", dnsSubdomain(253), 253},
		{"dnsSubdomain(254)", dnsSubdomain(254), 254},
		{"dnsSubdomain(64)", dnsSubdomain(64), 64},
		{"refOfLength(1000)", refOfLength(1000), 1000},
		{"refOfLength(1001)", refOfLength(1001), 1001},
		{"urlOfLength(525)", urlOfLength(525), 525},
		{"urlOfLength(526)", urlOfLength(526), 526},
		{"version64", version64, 64},
	} {
		if len(tc.got) != tc.want {
			t.Errorf("len(%s) = %d, want %d", tc.name, len(tc.got), tc.want)
		}
		if strings.HasPrefix(tc.name, "dnsSubdomain") && (strings.Contains(tc.got, "..") || strings.HasSuffix(tc.got, ".")) {
			t.Errorf("%s = %q is not a well-formed subdomain", tc.name, tc.got)
		}
	}
}
