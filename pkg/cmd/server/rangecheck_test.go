package server

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
)

// TestIntegerRangeCheck checks on a running server that int32 fields out of
// range are refused with 422 naming the field by every kind of write
// (before, server-side apply stored 3000000000 as -1294967296), that nothing
// is stored then, and that the int32 bounds themselves are stored exactly.
func TestIntegerRangeCheck(t *testing.T) {
	srv := startStandalone(t, t.TempDir())
	ctx := context.Background()
	catalogs := versioned.NewForConfigOrDie(srv.config).OlmV1().ClusterCatalogs()
	rc, err := rest.RESTClientFor(withNegotiation(srv.config))
	if err != nil {
		t.Fatal(err)
	}
	patch := func(pt types.PatchType, name, subresource, body string) (*olmv1.ClusterCatalog, error) {
		out := &olmv1.ClusterCatalog{}
		req := rc.Patch(pt).Resource("clustercatalogs").Name(name).Body([]byte(body))
		if subresource != "" {
			req = req.SubResource(subresource)
		}
		if pt == types.ApplyPatchType {
			req = req.Param("fieldManager", "rangecheck-test")
		}
		err := req.Do(ctx).Into(out)
		return out, err
	}
	applyBody := func(name, priority string) string {
		return "apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\nmetadata:\n  name: " + name +
			"\nspec:\n  source:\n    type: Image\n    image:\n      ref: quay.io/operatorhubio/catalog:latest\n  priority: " + priority + "\n"
	}

	t.Run("create out of range", func(t *testing.T) {
		cc := newCatalog("too-big")
		// The typed client cannot hold 3000000000 in an int32: send raw JSON.
		body := `{"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterCatalog","metadata":{"name":"too-big"},` +
			`"spec":{"source":{"type":"Image","image":{"ref":"` + cc.Spec.Source.Image.Ref + `"}},"priority":3000000000}}`
		var code int
		err := rc.Post().Resource("clustercatalogs").SetHeader("Content-Type", "application/json").
			Body([]byte(body)).Do(ctx).StatusCode(&code).Error()
		assertInvalidField(t, err, "spec.priority")
		if code != http.StatusUnprocessableEntity {
			t.Errorf("status code %d, want 422", code)
		}
		if _, err := catalogs.Get(ctx, "too-big", metav1.GetOptions{}); err == nil {
			t.Error("the refused catalog was stored")
		}
	})

	t.Run("create in YAML out of range", func(t *testing.T) {
		err := rc.Post().Resource("clustercatalogs").SetHeader("Content-Type", "application/yaml").
			Body([]byte(applyBody("too-big-yaml", "-3000000000"))).Do(ctx).Error()
		assertInvalidField(t, err, "spec.priority")
		if _, err := catalogs.Get(ctx, "too-big-yaml", metav1.GetOptions{}); err == nil {
			t.Error("the refused catalog was stored")
		}
	})

	t.Run("server-side apply create out of range", func(t *testing.T) {
		_, err := patch(types.ApplyPatchType, "applied", "", applyBody("applied", "3000000000"))
		assertInvalidField(t, err, "spec.priority")
		if _, err := catalogs.Get(ctx, "applied", metav1.GetOptions{}); err == nil {
			t.Error("the refused catalog was stored")
		}
	})

	for _, bound := range []int32{math.MaxInt32, math.MinInt32} {
		t.Run("server-side apply stores the bound "+itoa(bound), func(t *testing.T) {
			got, err := patch(types.ApplyPatchType, "applied", "", applyBody("applied", itoa(bound)))
			if err != nil {
				t.Fatalf("apply priority %d: %v", bound, err)
			}
			stored, err := catalogs.Get(ctx, "applied", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Priority != bound || stored.Spec.Priority != bound {
				t.Errorf("priority returned %d, stored %d, want %d", got.Spec.Priority, stored.Spec.Priority, bound)
			}
		})
	}

	t.Run("server-side apply update out of range changes nothing", func(t *testing.T) {
		before, err := catalogs.Get(ctx, "applied", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = patch(types.ApplyPatchType, "applied", "", applyBody("applied", "3000000000"))
		assertInvalidField(t, err, "spec.priority")
		after, err := catalogs.Get(ctx, "applied", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.Spec.Priority != math.MinInt32 || after.Generation != before.Generation {
			t.Errorf("after the refused apply priority=%d generation=%d, want %d and %d unchanged",
				after.Spec.Priority, after.Generation, int32(math.MinInt32), before.Generation)
		}
	})

	t.Run("patches out of range", func(t *testing.T) {
		cases := []struct {
			name        string
			pt          types.PatchType
			subresource string
			body        string
			field       string
		}{
			{"merge", types.MergePatchType, "", `{"spec":{"priority":3000000000}}`, "spec.priority"},
			{"strategic merge", types.StrategicMergePatchType, "", `{"spec":{"priority":-2147483649}}`, "spec.priority"},
			{"json patch", types.JSONPatchType, "", `[{"op":"replace","path":"/spec/priority","value":3000000000}]`, "spec.priority"},
			{"status merge", types.MergePatchType, "status",
				`{"status":{"conditions":[{"type":"Serving","status":"False","reason":"X","message":"","lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":9223372036854775808}]}}`,
				"status.conditions[0].observedGeneration"},
		}
		for _, tc := range cases {
			_, err := patch(tc.pt, "applied", tc.subresource, tc.body)
			if err == nil {
				t.Errorf("%s patch accepted", tc.name)
				continue
			}
			assertInvalidField(t, err, tc.field)
		}
		after, err := catalogs.Get(ctx, "applied", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.Spec.Priority != math.MinInt32 {
			t.Errorf("after the refused patches priority=%d, want %d", after.Spec.Priority, int32(math.MinInt32))
		}
	})

	t.Run("merge patch in range is stored", func(t *testing.T) {
		got, err := patch(types.MergePatchType, "applied", "", `{"spec":{"priority":2147483647}}`)
		if err != nil {
			t.Fatalf("merge patch: %v", err)
		}
		if got.Spec.Priority != math.MaxInt32 {
			t.Errorf("priority = %d, want %d", got.Spec.Priority, int32(math.MaxInt32))
		}
	})

	t.Run("update with the typed client still works", func(t *testing.T) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := catalogs.Get(ctx, "applied", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Priority = -5
			_, err = catalogs.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
	})
}

func itoa(n int32) string {
	return strconv.FormatInt(int64(n), 10)
}
