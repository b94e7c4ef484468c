package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

// Waits of the catalog content scenario: how long a ClusterCatalog may stay
// without any condition before the scenario concludes that no catalog
// controller runs (and skips), and how long it may take to become Serving.
const (
	noControllerWait = 30 * time.Second
	servingWait      = 4 * time.Minute
)

var catalogsGVR = schema.GroupVersionResource{Group: group, Version: "v1", Resource: "clustercatalogs"}

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// testCatalogContent pushes a real catalog from ../shared/testdata to an
// in-process registry, applies a ClusterCatalog for it, waits for
// Serving=True and reads the content through kube-apiserver: filtered by
// package with kubectl get --raw, in full with Accept-Encoding: gzip (a gzip
// body), and again with If-Modified-Since (304).
func (e *env) testCatalogContent(t *testing.T) {
	e.needServer(t)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "..", "shared", "testdata", "catalogs", "large", "community-operators-v4.16")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("test data absent: %v", err)
	}
	var packages []string
	for _, en := range entries {
		if en.IsDir() {
			packages = append(packages, en.Name())
		}
	}
	sort.Strings(packages)
	if len(packages) == 0 {
		t.Skipf("no package folders in %s", dir)
	}
	pkg := packages[0]
	framework.WaitAPIServiceAvailable(t, e.cluster, framework.ServerAPIServiceName, apiServiceTimeout)
	c := e.cluster

	reg := framework.StartRegistry(t)
	ref, _ := reg.PushCatalog(t, dir, "catalogs/community:v4.16")
	t.Logf("pushed %s (%d packages)", ref, len(packages))
	manifest := fmt.Sprintf("apiVersion: %s/v1\nkind: ClusterCatalog\nmetadata:\n  name: e2e-community\nspec:\n  source:\n    type: Image\n    image:\n      ref: %s\n", group, ref)
	c.MustKubectl(t, "apply", "-f", writeFixture(t, "community.yaml", manifest))
	t.Cleanup(func() { c.Kubectl(t, c.AdminKubeconfig, "delete", "--wait=false", "clustercatalog", "e2e-community") })

	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		obj, err := dyn.Resource(catalogsGVR).Get(t.Context(), "e2e-community", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get ClusterCatalog: %v", err)
		}
		raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		data, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		out := string(data)
		var conds []condition
		if err := json.Unmarshal(data, &conds); err != nil {
			t.Fatalf("status.conditions: %v: %s", err, out)
		}
		serving := false
		for _, cond := range conds {
			if cond.Type == "Serving" && cond.Status == "True" {
				serving = true
			}
		}
		if serving {
			t.Logf("Serving=True after %s", time.Since(start).Round(time.Second))
			break
		}
		if len(conds) == 0 && time.Since(start) > noControllerWait {
			t.Skipf("no condition on the ClusterCatalog after %s: no catalog controller reconciles it yet (issue 5)", noControllerWait)
		}
		if time.Since(start) > servingWait {
			t.Fatalf("ClusterCatalog not Serving after %s; conditions %s", servingWait, out)
		}
		time.Sleep(2 * time.Second)
	}

	base := "/apis/" + group + "/v1/clustercatalogs/e2e-community/content"
	t.Run("package filter", func(t *testing.T) {
		out := c.MustKubectl(t, "get", "--raw", base+"?package="+pkg)
		blobs := 0
		sawPackage := false
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			var meta struct {
				Schema  string `json:"schema"`
				Package string `json:"package"`
				Name    string `json:"name"`
			}
			if err := json.Unmarshal([]byte(line), &meta); err != nil {
				t.Fatalf("blob %d is not JSON: %v", blobs, err)
			}
			blobs++
			if meta.Schema == "olm.package" && meta.Name == pkg {
				sawPackage = true
				continue
			}
			if meta.Package != pkg {
				t.Errorf("blob %s/%s of package %q in the content of package %q", meta.Schema, meta.Name, meta.Package, pkg)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if !sawPackage || blobs < 2 {
			t.Errorf("content of %s: %d blobs, olm.package blob present: %v", pkg, blobs, sawPackage)
		}
	})

	hc, err := rest.HTTPClientFor(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	var lastModified string
	t.Run("gzip through kube-apiserver", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, c.URL+base, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Set explicitly, so net/http hands over the body as sent.
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("status %s, Content-Encoding %q, want 200 and gzip", resp.Status, resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("body is not gzip: %v", err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("full content: %d bytes gzip, %d bytes plain", len(body), len(plain))
		if !bytes.Contains(plain, []byte(`"olm.package"`)) {
			t.Error("decompressed content holds no olm.package blob")
		}
		lastModified = resp.Header.Get("Last-Modified")
		if lastModified == "" {
			t.Error("no Last-Modified header")
		}
	})
	t.Run("If-Modified-Since through kube-apiserver", func(t *testing.T) {
		if lastModified == "" {
			t.Skip("no Last-Modified from the previous request")
		}
		req, err := http.NewRequest(http.MethodGet, c.URL+base, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("If-Modified-Since", lastModified)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("status %s, want 304 Not Modified", resp.Status)
		}
	})
}
