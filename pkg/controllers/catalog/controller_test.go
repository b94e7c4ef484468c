package catalog

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned/fake"
	listers "github.com/olm-apiserver/olm-apiserver/pkg/generated/listers/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
)

// testRegistry is go-containerregistry's in-memory registry behind an
// httptest server that can be stopped and restarted on the same address,
// counting the requests that pull (GET of manifests and blobs).
type testRegistry struct {
	t       testing.TB
	handler http.Handler
	addr    string
	srv     *httptest.Server
	pulls   atomic.Int64
	heads   atomic.Int64
}

func newRegistry(t testing.TB) *testRegistry {
	r := &testRegistry{t: t}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.Method == http.MethodGet && (strings.Contains(req.URL.Path, "/manifests/") || strings.Contains(req.URL.Path, "/blobs/")):
			r.pulls.Add(1)
		case req.Method == http.MethodHead && strings.Contains(req.URL.Path, "/manifests/"):
			r.heads.Add(1)
		}
		reg.ServeHTTP(w, req)
	})
	r.start("127.0.0.1:0")
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *testRegistry) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatalf("registry listen: %v", err)
	}
	r.srv = httptest.NewUnstartedServer(r.handler)
	r.srv.Listener = ln
	r.srv.Start()
	r.addr = ln.Addr().String()
}

func (r *testRegistry) stop() {
	if r.srv != nil {
		r.srv.Close()
		r.srv = nil
	}
}

// push builds a catalog image of fsys (labels nil: the default FBC label)
// and pushes it as repo:tag; it returns the digest ref.
func (r *testRegistry) push(t testing.TB, img v1.Image, repoTag string) string {
	t.Helper()
	p, err := image.NewPuller(image.Options{Keychain: authn.NewMultiKeychain()})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := p.Push(context.Background(), img, r.addr+"/"+repoTag)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	return ref
}

func catalogImage(t *testing.T, fsys fs.FS) v1.Image {
	t.Helper()
	img, err := image.CatalogImage(fsys, "/configs", nil)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func fbcOf(pkgs ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for _, p := range pkgs {
		m[p+"/catalog.yaml"] = &fstest.MapFile{Data: []byte(`schema: olm.package
name: ` + p + `
defaultChannel: stable
---
schema: olm.channel
package: ` + p + `
name: stable
entries:
  - name: ` + p + `.v1.0.0
---
schema: olm.bundle
package: ` + p + `
name: ` + p + `.v1.0.0
image: example.com/` + p + `-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: ` + p + `, version: 1.0.0}
`)}
	}
	return m
}

// env runs the controller against a fake clientset and a content store.
type env struct {
	t        testing.TB
	reg      *testRegistry
	client   *fake.Clientset
	dataDir  string
	store    *content.Store
	recorder *record.FakeRecorder
	cancel   context.CancelFunc
	done     chan struct{}
}

// newEnv uses NewSimpleClientset: NewClientset needs a structured-merge
// schema the generated fake lacks.
func newEnv(t testing.TB) *env {
	e := &env{t: t, reg: newRegistry(t), client: fake.NewSimpleClientset(), dataDir: t.TempDir()}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *env) start() {
	t := e.t
	store, err := content.Open(filepath.Join(e.dataDir, "content"), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	puller, err := image.NewPuller(image.Options{Keychain: authn.NewMultiKeychain(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.store = store
	e.recorder = record.NewFakeRecorder(1000)
	c, err := New(Options{
		Client: e.client, Store: store, Puller: puller, TempDir: filepath.Join(e.dataDir, "unpack"),
		ExternalAddress: "olm.example:6443", Recorder: e.recorder,
		RetryBaseDelay: 50 * time.Millisecond, RetryMaxDelay: 200 * time.Millisecond, PollUnit: 100 * time.Millisecond,
		Limits: image.Limits{MaxFileBytes: 64 << 20, MaxLayerBytes: 256 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() {
		defer close(e.done)
		if err := c.Run(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
}

func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
	e.cancel = nil
}

func (e *env) create(name, ref string, poll bool) {
	e.t.Helper()
	cat := &olmv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: olmv1.ClusterCatalogSpec{
			Source:           olmv1.CatalogSource{Type: olmv1.SourceTypeImage, Image: &olmv1.ImageSource{Ref: ref}},
			AvailabilityMode: olmv1.AvailabilityModeAvailable,
		},
	}
	if poll {
		one := 1
		cat.Spec.Source.Image.PollIntervalMinutes = &one
	}
	if _, err := e.client.OlmV1().ClusterCatalogs().Create(context.Background(), cat, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(name string) *olmv1.ClusterCatalog {
	e.t.Helper()
	cat, err := e.client.OlmV1().ClusterCatalogs().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cat
}

// waitFor polls the catalog until cond holds (at most 20 s).
func (e *env) waitFor(name, what string, cond func(*olmv1.ClusterCatalog) bool) *olmv1.ClusterCatalog {
	e.t.Helper()
	var last *olmv1.ClusterCatalog
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		cat, err := e.client.OlmV1().ClusterCatalogs().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = cat
		return cond(cat), nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v; last status %+v", what, err, last.Status)
	}
	return last
}

func hasCond(typ string, s metav1.ConditionStatus, reason string) func(*olmv1.ClusterCatalog) bool {
	return func(c *olmv1.ClusterCatalog) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, typ)
		return cond != nil && cond.Status == s && cond.Reason == reason && cond.ObservedGeneration == c.Generation
	}
}

func servedRef(ref string) func(*olmv1.ClusterCatalog) bool {
	return func(c *olmv1.ClusterCatalog) bool {
		return c.Status.ResolvedSource != nil && c.Status.ResolvedSource.Image.Ref == ref &&
			hasCond(olmv1.TypeServing, metav1.ConditionTrue, olmv1.ReasonAvailable)(c) &&
			hasCond(olmv1.TypeProgressing, metav1.ConditionTrue, olmv1.ReasonSucceeded)(c)
	}
}

// content GETs the catalog's content from the store's handler.
func (e *env) content(name, query string) (int, string, http.Header) {
	e.t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/apis/olm.operatorframework.io/v1/clustercatalogs/"+name+"/content"+query, nil)
	e.store.ServeContent(rec, req, name, "")
	return rec.Code, rec.Body.String(), rec.Header()
}

func cond(c *olmv1.ClusterCatalog, typ string) metav1.Condition {
	if x := meta.FindStatusCondition(c.Status.Conditions, typ); x != nil {
		return *x
	}
	return metav1.Condition{}
}

func TestTagServedPolledAndUpdated(t *testing.T) {
	e := newEnv(t)
	d1 := e.reg.push(t, catalogImage(t, fbcOf("alpha")), "catalogs/test:latest")
	e.create("test", e.reg.addr+"/catalogs/test:latest", true)
	cat := e.waitFor("test", "serving v1", servedRef(d1))

	if want := "https://olm.example:6443/apis/olm.operatorframework.io/v1/clustercatalogs/test/content"; cat.Status.URLs == nil || cat.Status.URLs.Base != want {
		t.Errorf("urls = %+v, want base %s", cat.Status.URLs, want)
	}
	if !slicesContains(cat.Finalizers, FinalizerName) {
		t.Errorf("finalizers = %v", cat.Finalizers)
	}
	code, body, hdr := e.content("test", "?package=alpha")
	if code != http.StatusOK || !strings.Contains(body, `"alpha.v1.0.0"`) {
		t.Fatalf("content = %d %q", code, body)
	}
	lastUnpacked, lastModified := cat.Status.LastUnpacked, hdr.Get("Last-Modified")
	if lastUnpacked == nil || lastModified == "" {
		t.Fatalf("lastUnpacked %v, Last-Modified %q", lastUnpacked, lastModified)
	}
	if !waitForEvent(e.recorder, "Normal "+EventUnpacked) {
		t.Error("no Unpacked event")
	}

	t.Run("same digest re-polled: nothing changes", func(t *testing.T) {
		pulls, heads := e.reg.pulls.Load(), e.reg.heads.Load()
		deadline := time.Now().Add(5 * time.Second)
		for e.reg.heads.Load() < heads+3 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := e.reg.heads.Load() - heads; got < 3 {
			t.Fatalf("%d polls in 5 s, want at least 3 (poll unit 100 ms)", got)
		}
		if got := e.reg.pulls.Load() - pulls; got != 0 {
			t.Errorf("%d pull requests for an unchanged digest", got)
		}
		now := e.get("test")
		if !now.Status.LastUnpacked.Equal(lastUnpacked) {
			t.Errorf("lastUnpacked moved: %v → %v", lastUnpacked, now.Status.LastUnpacked)
		}
		if _, _, h := e.content("test", ""); h.Get("Last-Modified") != lastModified {
			t.Errorf("Last-Modified moved: %s → %s", lastModified, h.Get("Last-Modified"))
		}
	})

	t.Run("new digest under the same tag is served after a poll", func(t *testing.T) {
		d2 := e.reg.push(t, catalogImage(t, fbcOf("alpha", "beta")), "catalogs/test:latest")
		cat := e.waitFor("test", "serving v2", servedRef(d2))
		if !cat.Status.LastUnpacked.After(lastUnpacked.Time) {
			t.Errorf("lastUnpacked %v not after %v", cat.Status.LastUnpacked, lastUnpacked)
		}
		if code, body, _ := e.content("test", "?package=beta"); code != http.StatusOK || !strings.Contains(body, `"beta.v1.0.0"`) {
			t.Errorf("content = %d %q", code, body)
		}
	})

	t.Run("invalid FBC: Blocked naming the file, previous content served", func(t *testing.T) {
		served := e.get("test").Status.ResolvedSource.Image.Ref
		bad := fbcOf("alpha")
		bad["broken/catalog.yaml"] = &fstest.MapFile{Data: []byte("schema: olm.bundle\nname: nopkg\n")}
		e.reg.push(t, catalogImage(t, bad), "catalogs/test:latest")
		cat := e.waitFor("test", "Blocked", hasCond(olmv1.TypeProgressing, metav1.ConditionFalse, olmv1.ReasonBlocked))
		if msg := cond(cat, olmv1.TypeProgressing).Message; !strings.Contains(msg, "broken/catalog.yaml") {
			t.Errorf("Blocked message %q does not name the file", msg)
		}
		if !hasCond(olmv1.TypeServing, metav1.ConditionTrue, olmv1.ReasonAvailable)(cat) || cat.Status.ResolvedSource.Image.Ref != served {
			t.Errorf("serving changed: %+v", cat.Status)
		}
		if code, body, _ := e.content("test", "?package=beta"); code != http.StatusOK || !strings.Contains(body, "beta") {
			t.Errorf("previous content not served: %d %q", code, body)
		}
		if !waitForEvent(e.recorder, "Warning "+EventUnpackFailed) {
			t.Error("no UnpackFailed event")
		}
		// Polls of the same broken digest pull nothing again.
		pulls := e.reg.pulls.Load()
		time.Sleep(500 * time.Millisecond)
		if got := e.reg.pulls.Load() - pulls; got != 0 {
			t.Errorf("%d pull requests re-polling a broken digest", got)
		}
	})
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func waitForEvent(r *record.FakeRecorder, prefix string) bool {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-r.Events:
			if strings.HasPrefix(ev, prefix) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// hostileLayer is a catalog image whose single layer escapes /configs.
func hostileImage(t *testing.T) v1.Image {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "configs/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "configs/escape", Typeflag: tar.TypeSymlink, Linkname: "../../../../etc/passwd"})
	_ = tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.ImageWithLayers(map[string]string{image.CatalogConfigsLabel: "/configs"}, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestBadImages(t *testing.T) {
	e := newEnv(t)
	noLabel, err := image.ImageWithLayers(nil, mustLayer(t, catalogImage(t, fbcOf("x"))))
	if err != nil {
		t.Fatal(err)
	}
	noLabelDigest := e.reg.push(t, noLabel, "nolabel:v1")
	hostileDigest := e.reg.push(t, hostileImage(t), "hostile:v1")
	cases := []struct {
		name, ref, reason string
		status            metav1.ConditionStatus
		msg               string
	}{
		{"missing label on a tag ref", e.reg.addr + "/nolabel:v1", olmv1.ReasonRetrying, metav1.ConditionTrue, `has no label operators.operatorframework.io.index.configs.v1`},
		{"missing label on a digest ref", noLabelDigest, olmv1.ReasonBlocked, metav1.ConditionFalse, `has no label operators.operatorframework.io.index.configs.v1`},
		{"missing tag", e.reg.addr + "/nolabel:v2", olmv1.ReasonRetrying, metav1.ConditionTrue, `answered 404 Not Found: MANIFEST_UNKNOWN`},
		{"unparseable ref", "UPPER/Case:bad tag", olmv1.ReasonBlocked, metav1.ConditionFalse, `invalid image reference`},
		{"hostile layer", hostileDigest, olmv1.ReasonBlocked, metav1.ConditionFalse, `symlink configs/escape -> ../../../../etc/passwd points outside the image root`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "bad-" + string(rune('a'+i))
			e.create(name, tc.ref, false)
			cat := e.waitFor(name, tc.reason, hasCond(olmv1.TypeProgressing, tc.status, tc.reason))
			if msg := cond(cat, olmv1.TypeProgressing).Message; !regexp.MustCompile(tc.msg).MatchString(msg) {
				t.Errorf("message %q does not match %q", msg, tc.msg)
			}
			if !hasCond(olmv1.TypeServing, metav1.ConditionFalse, olmv1.ReasonUnavailable)(cat) || cat.Status.ResolvedSource != nil || cat.Status.URLs != nil {
				t.Errorf("status claims content: %+v", cat.Status)
			}
			if code, _, _ := e.content(name, ""); code != http.StatusNotFound {
				t.Errorf("content answered %d, want 404", code)
			}
		})
	}
	entries, _ := os.ReadDir(filepath.Join(e.dataDir, "unpack"))
	if len(entries) != 0 {
		t.Errorf("unpack directory not cleaned: %v", entries)
	}
}

func mustLayer(t *testing.T, img v1.Image) v1.Layer {
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		t.Fatalf("layers: %v %v", ls, err)
	}
	return ls[0]
}

var ephemeralAddr = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)

func TestRegistryDownAndRestart(t *testing.T) {
	e := newEnv(t)
	d1 := e.reg.push(t, catalogImage(t, fbcOf("alpha")), "catalogs/test:latest")
	// The ref names the registry as "localhost:PORT"; the message must not
	// carry any other address (the resolved IP, the client's port).
	ref := strings.Replace(e.reg.addr, "127.0.0.1", "localhost", 1) + "/catalogs/test:latest"
	digestRef := strings.Replace(d1, "127.0.0.1", "localhost", 1)
	e.create("test", ref, true)
	cat := e.waitFor("test", "serving", servedRef(digestRef))
	unpacked := cat.Status.LastUnpacked

	addr := e.reg.addr
	e.reg.stop()
	cat = e.waitFor("test", "Retrying", hasCond(olmv1.TypeProgressing, metav1.ConditionTrue, olmv1.ReasonRetrying))
	msg := cond(cat, olmv1.TypeProgressing).Message
	if !strings.Contains(msg, "unreachable") || ephemeralAddr.MatchString(msg) {
		t.Errorf("Retrying message %q: want 'unreachable' and no IP:port", msg)
	}
	if !hasCond(olmv1.TypeServing, metav1.ConditionTrue, olmv1.ReasonAvailable)(cat) || cat.Status.ResolvedSource.Image.Ref != digestRef {
		t.Errorf("serving changed while the registry is down: %+v", cat.Status)
	}
	if code, _, _ := e.content("test", ""); code != http.StatusOK {
		t.Errorf("content %d while the registry is down", code)
	}
	e.reg.start(addr)
	e.waitFor("test", "Succeeded again", servedRef(digestRef))

	// Restart the controller and the store on the same data directory:
	// content is served before the controller runs, and nothing is pulled.
	e.stop()
	pulls := e.reg.pulls.Load()
	heads := e.reg.heads.Load()
	store, err := content.Open(filepath.Join(e.dataDir, "content"), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if info, ok := store.Info("test"); !ok || info.Revision != digestRef {
		t.Fatalf("store after restart: %+v %v", info, ok)
	}
	leftover := filepath.Join(e.dataDir, "unpack", "test-crashed")
	if err := os.MkdirAll(leftover, 0o700); err != nil {
		t.Fatal(err)
	}
	e.start()
	if code, _, _ := e.content("test", ""); code != http.StatusOK {
		t.Errorf("content %d right after restart", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.reg.heads.Load() < heads+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if e.reg.heads.Load() < heads+2 {
		t.Fatal("the restarted controller did not resolve the tag")
	}
	if got := e.reg.pulls.Load() - pulls; got != 0 {
		t.Errorf("%d pull requests after restart with an unchanged digest", got)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover extraction of a crash not removed: %v", err)
	}
	cat = e.get("test")
	if !servedRef(digestRef)(cat) || !cat.Status.LastUnpacked.Equal(unpacked) {
		t.Errorf("after restart: %+v (lastUnpacked was %v)", cat.Status, unpacked)
	}
}

func TestUnavailableAndDelete(t *testing.T) {
	e := newEnv(t)
	d1 := e.reg.push(t, catalogImage(t, fbcOf("alpha")), "catalogs/test:v1")
	e.create("test", d1, false)
	e.waitFor("test", "serving", servedRef(d1))

	cat := e.get("test")
	cat.Spec.AvailabilityMode = olmv1.AvailabilityModeUnavailable
	cat.Generation++ // the fake clientset does not manage generations
	if _, err := e.client.OlmV1().ClusterCatalogs().Update(context.Background(), cat, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cat = e.waitFor("test", "UserSpecifiedUnavailable", hasCond(olmv1.TypeServing, metav1.ConditionFalse, olmv1.ReasonUserSpecifiedUnavailable))
	if cat.Status.ResolvedSource != nil || cat.Status.URLs != nil || cat.Status.LastUnpacked != nil {
		t.Errorf("status still describes content: %+v", cat.Status)
	}
	if code, _, _ := e.content("test", ""); code != http.StatusNotFound {
		t.Errorf("content answered %d, want 404", code)
	}
	if _, ok := e.store.Info("test"); ok {
		t.Error("store still holds the content")
	}

	cat.Spec.AvailabilityMode = olmv1.AvailabilityModeAvailable
	cat.Generation++
	if _, err := e.client.OlmV1().ClusterCatalogs().Update(context.Background(), cat, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("test", "serving again", servedRef(d1))

	if err := e.client.OlmV1().ClusterCatalogs().Delete(context.Background(), "test", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := e.store.Info("test")
		return !ok, nil
	})
	if err != nil {
		t.Fatal("content still stored after delete")
	}
	if code, _, _ := e.content("test", ""); code != http.StatusNotFound {
		t.Errorf("content answered %d after delete, want 404", code)
	}
	// The directory goes when the last reader of the old revision lets go
	// of it, which may be just after Info stops reporting it.
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(filepath.Join(e.dataDir, "content", "test"))
		return os.IsNotExist(err), nil
	})
	if err != nil {
		t.Error("content directory left after delete")
	}
}

// TestSharedCatalog unpacks a real catalog (upstream catalogd's test
// catalog) from an image and compares the served blob count with a direct
// load of the directory.
func TestSharedCatalog(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "testdata", "catalogs", "testdata", "catalogd-test-catalog")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data absent (%s): %v", dir, err)
	}
	e := newEnv(t)
	d := e.reg.push(t, catalogImage(t, os.DirFS(dir)), "catalogd-test:latest")
	e.create("real", e.reg.addr+"/catalogd-test:latest", false)
	e.waitFor("real", "serving", servedRef(d))

	direct, err := content.Open(t.TempDir(), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Put("direct", os.DirFS(dir), "dir"); err != nil {
		t.Fatal(err)
	}
	want, _ := direct.Info("direct")
	got, _ := e.store.Info("real")
	if got.Blobs != want.Blobs || got.Size != want.Size || got.Blobs == 0 {
		t.Errorf("served %d blobs / %d bytes, directory has %d / %d", got.Blobs, got.Size, want.Blobs, want.Size)
	}
}

// TestStartPrunesContentOfDeletedCatalogs: content left in the store for
// "gone", whose ClusterCatalog was deleted while no controller ran, is
// removed when the controller starts; "kept", whose ClusterCatalog exists,
// keeps its revision and is not pulled again; content put directly under a
// revision that is not a digest reference ("tool") is left alone.
func TestStartPrunesContentOfDeletedCatalogs(t *testing.T) {
	e := &env{t: t, reg: newRegistry(t), client: fake.NewSimpleClientset(), dataDir: t.TempDir()}
	t.Cleanup(e.stop)
	keptRef := e.reg.push(t, catalogImage(t, fbcOf("alpha")), "catalogs/kept:v1")
	goneRef := e.reg.addr + "/catalogs/gone@sha256:" + strings.Repeat("2", 64)
	before, err := content.Open(filepath.Join(e.dataDir, "content"), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, rev string }{{"kept", keptRef}, {"gone", goneRef}, {"tool", "sha256:0000"}} {
		if _, err := before.Put(c.name, fbcOf("alpha"), c.rev); err != nil {
			t.Fatal(err)
		}
	}
	keptInfo, _ := before.Info("kept")
	e.create("kept", keptRef, false)
	pulls := e.reg.pulls.Load()

	e.start()
	e.waitFor("kept", "serving", servedRef(keptRef))
	// The prune runs before the workers: by now "gone" must be gone.
	if info, ok := e.store.Info("gone"); ok {
		t.Errorf("content of the deleted catalog still stored: %+v", info)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "content", "gone")); !os.IsNotExist(err) {
		t.Errorf("directory of the deleted catalog left: %v", err)
	}
	if info, ok := e.store.Info("kept"); !ok || info != keptInfo {
		t.Errorf("content of the existing catalog changed: %+v %v, want %+v", info, ok, keptInfo)
	}
	if info, ok := e.store.Info("tool"); !ok || info.Revision != "sha256:0000" {
		t.Errorf("content stored directly was removed: %+v %v", info, ok)
	}
	if got := e.reg.pulls.Load() - pulls; got != 0 {
		t.Errorf("%d pull requests for content already stored", got)
	}
	if code, _, _ := e.content("gone", ""); code != http.StatusNotFound {
		t.Errorf("content of the deleted catalog answered %d, want 404", code)
	}
}

// TestPruneContent: the rules of PruneContent, one catalog at a time.
func TestPruneContent(t *testing.T) {
	const digest = "example.test/catalogs/x@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	cases := []struct {
		name        string
		exists      bool   // a ClusterCatalog of that name is listed
		terminating bool   // ... with a deletionTimestamp
		rev         string // revision the content was stored under
		hold        bool
		wantRemoved bool
	}{
		{"catalog exists", true, false, digest, false, false},
		{"catalog being deleted", true, true, digest, false, false},
		{"catalog gone", false, false, digest, false, true},
		{"catalog gone, held", false, false, digest, true, false},
		{"catalog gone, tag revision", false, false, "example.test/catalogs/x:latest", false, false},
		{"catalog gone, bare digest revision", false, false, "sha256:0000", false, false},
		{"catalog gone, arbitrary revision", false, false, "dir", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store, err := content.Open(t.TempDir(), content.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Put("cat", fbcOf("alpha"), c.rev); err != nil {
				t.Fatal(err)
			}
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if c.exists {
				cat := &olmv1.ClusterCatalog{ObjectMeta: metav1.ObjectMeta{Name: "cat"}}
				if c.terminating {
					now := metav1.Now()
					cat.DeletionTimestamp = &now
					cat.Finalizers = []string{FinalizerName}
				}
				if err := indexer.Add(cat); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := PruneContent(context.Background(), store, listers.NewClusterCatalogLister(indexer),
				func() bool { return c.hold })
			if err != nil {
				t.Fatal(err)
			}
			_, stored := store.Info("cat")
			if stored == c.wantRemoved {
				t.Errorf("stored after prune = %v, want %v", stored, !c.wantRemoved)
			}
			if got := len(removed) == 1 && removed[0].Catalog == "cat" && removed[0].Revision == c.rev; got != c.wantRemoved || len(removed) > 1 {
				t.Errorf("PruneContent returned %+v, want removed = %v", removed, c.wantRemoved)
			}
		})
	}
}
