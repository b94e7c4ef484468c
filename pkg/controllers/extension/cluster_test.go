package extension_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/applier"
	"github.com/olm-apiserver/olm-apiserver/pkg/cmd/server"
	"github.com/olm-apiserver/olm-apiserver/pkg/content"
	"github.com/olm-apiserver/olm-apiserver/pkg/controllers/extension"
	"github.com/olm-apiserver/olm-apiserver/pkg/generated/clientset/versioned"
	"github.com/olm-apiserver/olm-apiserver/pkg/image"
	"github.com/olm-apiserver/olm-apiserver/pkg/resolve"
	"github.com/olm-apiserver/olm-apiserver/pkg/revision"
	"github.com/olm-apiserver/olm-apiserver/test/framework"
)

const waitTimeout = 90 * time.Second

// startAPI runs a standalone olm-apiserver in this process, without its own
// extension controller (the tests run theirs), and returns a client for it.
func startAPI(t *testing.T) versioned.Interface {
	t.Helper()
	dataDir := t.TempDir()
	o := server.NewOptions(io.Discard)
	o.Standalone = true
	o.DataDir = dataDir
	o.Extensions.Enabled = false
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Recommended.SecureServing.Listener = ln
	o.Recommended.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
		}
	})
	var client versioned.Interface
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, errors.Join(errors.New("server exited"), err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "kubeconfig"))
		if err != nil {
			return false, nil
		}
		c, err := versioned.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		if _, err := c.OlmV1().ClusterExtensions().List(ctx, metav1.ListOptions{}); err != nil {
			return false, nil
		}
		client = c
		return true, nil
	})
	if err != nil {
		t.Fatalf("olm-apiserver did not start: %v", err)
	}
	return client
}

// countingUnpacker records every Unpack call; while gate is set, each call
// first waits for gate to return.
type countingUnpacker struct {
	inner extension.BundleUnpacker
	mu    sync.Mutex
	calls []string // "ref known=<digest>"
	gate  func(ctx context.Context) error
}

func (u *countingUnpacker) Unpack(ctx context.Context, ref, known string) (extension.UnpackedBundle, error) {
	u.mu.Lock()
	u.calls = append(u.calls, ref+" known="+known)
	gate := u.gate
	u.mu.Unlock()
	if gate != nil {
		if err := gate(ctx); err != nil {
			return extension.UnpackedBundle{}, err
		}
	}
	return u.inner.Unpack(ctx, ref, known)
}

func (u *countingUnpacker) setGate(g func(ctx context.Context) error) {
	u.mu.Lock()
	u.gate = g
	u.mu.Unlock()
}

// events records the events of the controller as "Type Reason Message".
type events struct {
	mu   sync.Mutex
	list []string
}

func (r *events) Event(_ runtime.Object, typ, reason, msg string) {
	r.mu.Lock()
	r.list = append(r.list, typ+" "+reason+" "+msg)
	r.mu.Unlock()
}

func (r *events) Eventf(o runtime.Object, typ, reason, format string, args ...any) {
	r.Event(o, typ, reason, fmt.Sprintf(format, args...))
}

func (r *events) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	r.Eventf(o, typ, reason, format, args...)
}

// find returns the first event starting with prefix and containing part.
func (r *events) find(prefix, part string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.list {
		if strings.HasPrefix(e, prefix) && strings.Contains(e, part) {
			return true
		}
	}
	return false
}

func (u *countingUnpacker) take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.calls
	u.calls = nil
	return c
}

// env is one target cluster, one API server, one catalog and the controller.
type env struct {
	t        *testing.T
	cluster  *framework.Cluster
	client   versioned.Interface
	dyn      dynamic.Interface
	store    *content.Store
	dataDir  string
	unpacker *countingUnpacker
	events   *events
	stop     func()
}

func (e *env) startController(target *rest.Config) {
	t := e.t
	puller, err := image.NewPuller(image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := extension.New(extension.Config{
		Client:       e.client,
		Target:       target,
		Content:      resolve.SeqSource(e.store.PackageBlobs),
		DataDir:      e.dataDir,
		Unpacker:     e.unpacker,
		Puller:       puller,
		ResyncPeriod: 3 * time.Second,
		Recorder:     e.events,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ctrl.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("controller: %v", err)
		}
	}()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(e.stop)
}

// serveCatalog stores fbcDir as the content of catalog name and creates the
// ClusterCatalog with status Serving=True.
func (e *env) serveCatalog(name, fbcDir, imageRef string) {
	t := e.t
	ctx := context.Background()
	if _, err := e.store.Put(name, os.DirFS(fbcDir), "rev1"); err != nil {
		t.Fatalf("storing catalog %s: %v", name, err)
	}
	cc := &olmv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: olmv1.ClusterCatalogSpec{Source: olmv1.CatalogSource{
			Type: olmv1.SourceTypeImage, Image: &olmv1.ImageSource{Ref: imageRef},
		}},
	}
	if _, err := e.client.OlmV1().ClusterCatalogs().Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A catalog controller running in the server may write status too; both
	// end with Serving=True for the same content.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		cur, err := e.client.OlmV1().ClusterCatalogs().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(cur.Status.Conditions, olmv1.TypeServing) {
			return true, nil
		}
		meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: olmv1.TypeServing, Status: metav1.ConditionTrue, Reason: olmv1.ReasonAvailable, Message: "test content"})
		cur.Status.ResolvedSource = &olmv1.ResolvedCatalogSource{Type: olmv1.SourceTypeImage, Image: &olmv1.ResolvedImageSource{Ref: imageRef}}
		_, err = e.client.OlmV1().ClusterCatalogs().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("catalog %s not serving: %v", name, err)
	}
}

func (e *env) createNamespace(name string) {
	_, err := e.cluster.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}

func newExtension(name, namespace, pkg, version string) *olmv1.ClusterExtension {
	return &olmv1.ClusterExtension{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: olmv1.ClusterExtensionSpec{
			Namespace: namespace,
			Source: olmv1.SourceConfig{SourceType: olmv1.SourceTypeCatalog, Catalog: &olmv1.CatalogFilter{
				PackageName: pkg, Version: version,
			}},
		},
	}
}

func (e *env) create(ce *olmv1.ClusterExtension) {
	if _, err := e.client.OlmV1().ClusterExtensions().Create(context.Background(), ce, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// update applies change to the ClusterExtension's spec, retrying conflicts.
func (e *env) update(t *testing.T, name string, change func(*olmv1.ClusterExtension)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		ce, err := e.client.OlmV1().ClusterExtensions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(ce)
		_, err = e.client.OlmV1().ClusterExtensions().Update(ctx, ce, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("updating %s: %v", name, err)
	}
}

// waitFor polls the ClusterExtension until ok returns true, failing with
// its last conditions.
func (e *env) waitFor(t *testing.T, name, what string, ok func(*olmv1.ClusterExtension) bool) *olmv1.ClusterExtension {
	t.Helper()
	var last *olmv1.ClusterExtension
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		ce, err := e.client.OlmV1().ClusterExtensions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = ce
		return ok(ce), nil
	})
	if err != nil {
		var conds []string
		if last != nil {
			for _, c := range last.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message))
			}
		}
		t.Fatalf("ClusterExtension %s: %s not reached: %v\nconditions:\n  %s", name, what, err, strings.Join(conds, "\n  "))
	}
	return last
}

func condition(ce *olmv1.ClusterExtension, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(ce.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// installed waits until version is installed and Progressing is Succeeded
// for the current generation.
func (e *env) installed(t *testing.T, name, version string) *olmv1.ClusterExtension {
	t.Helper()
	return e.waitFor(t, name, "Installed=True version "+version, func(ce *olmv1.ClusterExtension) bool {
		p := condition(ce, olmv1.TypeProgressing)
		return meta.IsStatusConditionTrue(ce.Status.Conditions, olmv1.TypeInstalled) &&
			ce.Status.Install != nil && ce.Status.Install.Bundle.Version == version &&
			p.Reason == olmv1.ReasonSucceeded && p.ObservedGeneration == ce.Generation
	})
}

// progressing waits until Progressing has reason and a message containing
// want, for the current generation.
func (e *env) progressing(t *testing.T, name, reason, want string) metav1.Condition {
	t.Helper()
	ce := e.waitFor(t, name, "Progressing "+reason+" with "+want, func(ce *olmv1.ClusterExtension) bool {
		p := condition(ce, olmv1.TypeProgressing)
		return p.Reason == reason && p.ObservedGeneration == ce.Generation && strings.Contains(p.Message, want)
	})
	return condition(ce, olmv1.TypeProgressing)
}

func (e *env) delete(t *testing.T, name string) {
	t.Helper()
	if err := e.client.OlmV1().ClusterExtensions().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.client.OlmV1().ClusterExtensions().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("ClusterExtension %s not gone after delete: %v", name, err)
	}
}

var (
	gvrConfigMap   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrService     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrSecret      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrVWC         = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	gvrSA          = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrDeployment  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrCRD         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrClusterRole = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	gvrCRB         = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	gvrRole        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	gvrRoleBinding = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// get returns the object or nil when it does not exist.
func (e *env) get(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	var ri dynamic.ResourceInterface = e.dyn.Resource(gvr)
	if ns != "" {
		ri = e.dyn.Resource(gvr).Namespace(ns)
	}
	u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// owned lists the objects of a resource labelled as owned by owner.
func (e *env) owned(t *testing.T, gvr schema.GroupVersionResource, owner string) []string {
	t.Helper()
	list, err := e.dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{LabelSelector: applier.OwnerLabel + "=" + owner})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list.Items {
		n := u.GetName()
		if u.GetNamespace() != "" {
			n = u.GetNamespace() + "/" + n
		}
		names = append(names, n)
	}
	return names
}

func (e *env) mustOwn(t *testing.T, owner string, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := e.get(t, gvr, ns, name)
	if u == nil {
		t.Fatalf("%s %s/%s does not exist", gvr.Resource, ns, name)
	}
	if got := u.GetLabels()[applier.OwnerLabel]; got != owner {
		t.Errorf("%s %s/%s: label %s=%q, want %q", gvr.Resource, ns, name, applier.OwnerLabel, got, owner)
	}
	return u
}

func (e *env) waitGone(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return e.get(t, gvr, ns, name) == nil, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s still exists", gvr.Resource, ns, name)
	}
}

func (e *env) record(t *testing.T, name string) *revision.Record {
	t.Helper()
	// A store of its own, as another replica would read it.
	s, err := revision.NewSecretStore(e.cluster.Client, revision.DefaultNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestController runs the scenarios of issue 8 against a real kube-apiserver
// and etcd (framework.StartCluster), with bundle images in an in-process
// registry, one after the other on the same cluster.
func TestController(t *testing.T) {
	c := framework.StartCluster(t)
	reg := framework.StartRegistry(t)
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	store, err := content.Open(t.TempDir(), content.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cluster: c, client: startAPI(t), dyn: dyn, store: store, dataDir: t.TempDir(), events: &events{}}
	puller, err := image.NewPuller(image.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.unpacker = &countingUnpacker{inner: &extension.ImageUnpacker{Puller: puller, Dir: filepath.Join(e.dataDir, "bundles")}}

	// Bundles: the real test-operator 1.0.0, 1.0.2 (drops two ConfigMaps),
	// own-namespace-operator, and our widget bundles.
	push := func(dir, repoTag string) string {
		_, digestRef := reg.PushBundle(t, dir, repoTag)
		return digestRef
	}
	test100 := push(sharedBundle(t, "operator-controller-e2e/test-operator/v1.0.0"), "bundles/test-operator:v1.0.0")
	test102 := push(sharedBundle(t, "operator-controller-e2e/test-operator/v1.0.2"), "bundles/test-operator:v1.0.2")
	own := push(sharedBundle(t, "operator-controller-e2e/own-namespace-operator/v1.0.0"), "bundles/own:v1.0.0")
	widget1 := push(widgetBundle(t, "1.0.0", "integer", []string{"AllNamespaces"}, "widget-config"), "bundles/widget:v1.0.0")
	widget2 := push(widgetBundle(t, "2.0.0", "string", []string{"AllNamespaces"}, "widget-config", "widget-v2"), "bundles/widget:v2.0.0")
	hook := push(withWebhook(t, widgetBundle(t, "1.0.0", "integer", []string{"AllNamespaces"}, "hook-config")), "bundles/hook:v1.0.0")

	fbc := writeCatalog(t,
		fbcPackage("test",
			fbcBundle{name: "test-operator.1.0.0", version: "1.0.0", image: test100},
			fbcBundle{name: "test-operator.1.0.2", version: "1.0.2", image: test102, replaces: "test-operator.1.0.0"}),
		fbcPackage("own-namespace", fbcBundle{name: "own-namespace-operator.1.0.0", version: "1.0.0", image: own}),
		fbcPackage("widget",
			fbcBundle{name: "widget-operator.1.0.0", version: "1.0.0", image: widget1},
			fbcBundle{name: "widget-operator.2.0.0", version: "2.0.0", image: widget2, replaces: "widget-operator.1.0.0"}),
		fbcPackage("hook", fbcBundle{name: "hook-operator.1.0.0", version: "1.0.0", image: hook}),
		fbcPackage("needs-widget", fbcBundle{name: "needs-widget.1.0.0", version: "1.0.0", image: test100, requires: []string{"widget", ">=1.0.0"}}),
	)
	lateCatalog := writeCatalog(t, fbcPackage("late", fbcBundle{name: "late-operator.1.0.0", version: "1.0.0", image: widget1}))
	_, catalogRef := reg.PushCatalog(t, fbc, "catalogs/test:v1")
	e.serveCatalog("test-catalog", fbc, catalogRef)
	e.createNamespace(revision.DefaultNamespace) // of the revision record Secrets
	e.startController(c.AdminConfig)

	t.Run("install, upgrade with prune, non-successor, SelfCertified, restart, drift, delete", func(t *testing.T) {
		const name, ns = "test", "test-ns"
		e.createNamespace(ns)
		e.create(newExtension(name, ns, "test", "1.0.0"))
		ce := e.installed(t, name, "1.0.0")
		if got := ce.Status.Install.Bundle; got.Name != "test-operator.1.0.0" {
			t.Errorf("status.install.bundle = %+v", got)
		}
		if msg := condition(ce, olmv1.TypeInstalled).Message; !strings.Contains(msg, "test-operator.1.0.0 (version 1.0.0)") {
			t.Errorf("Installed message %q does not name the bundle and version", msg)
		}
		if p := condition(ce, olmv1.TypeProgressing); p.Status != metav1.ConditionTrue || p.Message != "Desired state reached" {
			t.Errorf("Progressing = %+v", p)
		}
		for _, typ := range []string{olmv1.TypeDeprecated, olmv1.TypePackageDeprecated, olmv1.TypeChannelDeprecated, olmv1.TypeBundleDeprecated} {
			if c := condition(ce, typ); c.Status != metav1.ConditionFalse || c.Reason != olmv1.ReasonNotDeprecated {
				t.Errorf("%s = %s/%s, want False/NotDeprecated", typ, c.Status, c.Reason)
			}
		}
		if !contains(ce.Finalizers, extension.Finalizer) {
			t.Errorf("finalizers %v lack %s", ce.Finalizers, extension.Finalizer)
		}
		e.mustOwn(t, name, gvrDeployment, ns, "test-operator")
		e.mustOwn(t, name, gvrCRD, "", "olme2etests.olm.operatorframework.io")
		if !e.events.find("Normal Installed", "test-operator.1.0.0 (version 1.0.0)") {
			t.Errorf("no Installed event; events: %v", e.events.list)
		}
		e.mustOwn(t, name, gvrConfigMap, ns, "dummy-configmap")
		e.mustOwn(t, name, gvrConfigMap, ns, "httpd-script")
		e.mustOwn(t, name, gvrConfigMap, ns, "test-configmap")
		if len(e.owned(t, gvrClusterRole, name)) == 0 || len(e.owned(t, gvrCRB, name)) == 0 || len(e.owned(t, gvrSA, name)) == 0 {
			t.Errorf("RBAC missing: clusterroles %v, clusterrolebindings %v, serviceaccounts %v",
				e.owned(t, gvrClusterRole, name), e.owned(t, gvrCRB, name), e.owned(t, gvrSA, name))
		}
		t.Logf("installed 1.0.0: %d cluster roles, %d service accounts", len(e.owned(t, gvrClusterRole, name)), len(e.owned(t, gvrSA, name)))

		// Upgrade along the replaces edge: 1.0.2 dropped two ConfigMaps.
		e.update(t, name, func(ce *olmv1.ClusterExtension) { ce.Spec.Source.Catalog.Version = "1.0.2" })
		e.installed(t, name, "1.0.2")
		e.waitGone(t, gvrConfigMap, ns, "dummy-configmap")
		e.waitGone(t, gvrConfigMap, ns, "httpd-script")
		e.mustOwn(t, name, gvrConfigMap, ns, "test-configmap")
		rec := e.record(t, name)
		if rec == nil || rec.Installed == nil || rec.Installed.Version != "1.0.2" || !strings.HasPrefix(rec.Installed.Digest, "sha256:") {
			t.Fatalf("record after upgrade: %+v", rec)
		}
		for _, r := range rec.Objects {
			if r.Name == "dummy-configmap" {
				t.Errorf("record still lists %v", r)
			}
		}

		// Back to 1.0.0 is not a successor under CatalogProvided.
		e.update(t, name, func(ce *olmv1.ClusterExtension) { ce.Spec.Source.Catalog.Version = "1.0.0" })
		p := e.progressing(t, name, olmv1.ReasonRetrying, "or a successor of it")
		t.Logf("non-successor: %s", p.Message)
		if !e.events.find("Normal Upgraded", "test-operator.1.0.2 (version 1.0.2)") || !e.events.find("Warning Retrying", "or a successor of it") {
			t.Errorf("Upgraded or Retrying event missing; events: %v", e.events.list)
		}
		ce = e.waitFor(t, name, "Installed stays 1.0.2", func(ce *olmv1.ClusterExtension) bool {
			return meta.IsStatusConditionTrue(ce.Status.Conditions, olmv1.TypeInstalled) && ce.Status.Install.Bundle.Version == "1.0.2"
		})
		// SelfCertified allows it; the dropped ConfigMaps come back.
		e.update(t, name, func(ce *olmv1.ClusterExtension) {
			ce.Spec.Source.Catalog.UpgradeConstraintPolicy = olmv1.UpgradeConstraintPolicySelfCertified
		})
		e.installed(t, name, "1.0.0")
		e.mustOwn(t, name, gvrConfigMap, ns, "dummy-configmap")

		// Restart: no second pull, no rewrite; drift made meanwhile is corrected.
		e.stop()
		e.unpacker.take()
		before := map[string]string{}
		for _, o := range []struct {
			gvr      schema.GroupVersionResource
			ns, name string
		}{{gvrDeployment, ns, "test-operator"}, {gvrCRD, "", "olme2etests.olm.operatorframework.io"}, {gvrConfigMap, ns, "test-configmap"}} {
			before[o.name] = e.mustOwn(t, name, o.gvr, o.ns, o.name).GetResourceVersion()
		}
		if err := e.dyn.Resource(gvrConfigMap).Namespace(ns).Delete(context.Background(), "dummy-configmap", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The new controller has an empty data directory, as another
		// replica taking the leadership over: the installed revision is read
		// from its Secret in the target cluster.
		e.dataDir = t.TempDir()
		e.startController(c.AdminConfig)
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
			return e.get(t, gvrConfigMap, ns, "dummy-configmap") != nil, nil
		})
		if err != nil {
			t.Fatal("dummy-configmap deleted by hand was not recreated after the restart")
		}
		// Objects after the ConfigMap in apply order: let that reconcile, and
		// the next resync, finish before comparing.
		time.Sleep(7 * time.Second)
		for _, o := range []struct {
			gvr      schema.GroupVersionResource
			ns, name string
		}{{gvrDeployment, ns, "test-operator"}, {gvrCRD, "", "olme2etests.olm.operatorframework.io"}, {gvrConfigMap, ns, "test-configmap"}} {
			if rv := e.mustOwn(t, name, o.gvr, o.ns, o.name).GetResourceVersion(); rv != before[o.name] {
				t.Errorf("%s rewritten after restart: resourceVersion %s -> %s", o.name, before[o.name], rv)
			}
		}
		for _, call := range e.unpacker.take() {
			if strings.HasSuffix(call, "known=") {
				t.Errorf("unpack after restart without the recorded digest (would resolve or pull again): %s", call)
			}
		}

		// Drift: a field changed by hand is set back by the periodic resync.
		cm := e.get(t, gvrConfigMap, ns, "test-configmap")
		orig, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		if err := unstructured.SetNestedField(cm.Object, "edited", "data", "hand"); err != nil {
			t.Fatal(err)
		}
		for k := range orig {
			unstructured.RemoveNestedField(cm.Object, "data", k)
		}
		if _, err := e.dyn.Resource(gvrConfigMap).Namespace(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
			data, _, _ := unstructured.NestedStringMap(e.get(t, gvrConfigMap, ns, "test-configmap").Object, "data")
			for k, v := range orig {
				if data[k] != v {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Errorf("data of test-configmap edited by hand not restored: %v", err)
		}

		// Delete: everything goes, CRD included, then the finalizer.
		e.delete(t, name)
		for _, gvr := range []schema.GroupVersionResource{gvrDeployment, gvrCRD, gvrConfigMap, gvrClusterRole, gvrCRB, gvrSA, gvrRole, gvrRoleBinding} {
			err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
				return len(e.owned(t, gvr, name)) == 0, nil
			})
			if err != nil {
				t.Errorf("%s of %s left after delete: %v", gvr.Resource, name, e.owned(t, gvr, name))
			}
		}
		if rec := e.record(t, name); rec != nil {
			t.Errorf("revision record left after delete: %+v", rec)
		}
	})

	t.Run("pre-existing object is not adopted", func(t *testing.T) {
		const name, ns = "widget-conflict", "conflict-ns"
		e.createNamespace(ns)
		pre, err := e.cluster.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "widget-config"}, Data: map[string]string{"mine": "yes"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.create(newExtension(name, ns, "widget", "1.0.0"))
		p := e.progressing(t, name, olmv1.ReasonBlocked, "ConfigMap "+ns+"/widget-config already exists and is not managed by any ClusterExtension")
		if !strings.Contains(p.Message, "widget-operator.1.0.0 (version 1.0.0)") || p.Status != metav1.ConditionFalse {
			t.Errorf("Progressing = %s %q, want False naming the bundle", p.Status, p.Message)
		}
		got, err := e.cluster.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "widget-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != pre.ResourceVersion || got.Labels[applier.OwnerLabel] != "" {
			t.Errorf("pre-existing ConfigMap touched: resourceVersion %s -> %s, labels %v", pre.ResourceVersion, got.ResourceVersion, got.Labels)
		}
		if u := e.get(t, gvrCRD, "", "widgets.example.com"); u != nil {
			t.Errorf("CRD applied despite the conflict")
		}
		e.delete(t, name)
		if _, err := e.cluster.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "widget-config", metav1.GetOptions{}); err != nil {
			t.Errorf("pre-existing ConfigMap deleted with the extension: %v", err)
		}
	})

	t.Run("preflight refusal blocks, enforcement None lets it through", func(t *testing.T) {
		const name, ns = "widget", "widget-ns"
		e.createNamespace(ns)
		e.create(newExtension(name, ns, "widget", "1.0.0"))
		e.installed(t, name, "1.0.0")
		e.mustOwn(t, name, gvrService, ns, "widget-metrics")
		e.mustOwn(t, name, gvrDeployment, ns, "widget-operator")
		crdBefore := e.mustOwn(t, name, gvrCRD, "", "widgets.example.com").GetResourceVersion()

		e.update(t, name, func(ce *olmv1.ClusterExtension) { ce.Spec.Source.Catalog.Version = "2.0.0" })
		p := e.progressing(t, name, olmv1.ReasonBlocked, "widgets.example.com v1 .spec.size: type:")
		t.Logf("preflight: %s", p.Message)
		if !strings.Contains(p.Message, "widget-operator.2.0.0 (version 2.0.0)") {
			t.Errorf("message %q does not name the bundle", p.Message)
		}
		if rv := e.get(t, gvrCRD, "", "widgets.example.com").GetResourceVersion(); rv != crdBefore {
			t.Errorf("CRD changed despite the preflight refusal")
		}
		if e.get(t, gvrConfigMap, ns, "widget-v2") != nil {
			t.Errorf("object of 2.0.0 applied despite the preflight refusal")
		}
		e.update(t, name, func(ce *olmv1.ClusterExtension) {
			ce.Spec.Install = &olmv1.ClusterExtensionInstallConfig{Preflight: &olmv1.PreflightConfig{
				CRDUpgradeSafety: &olmv1.CRDUpgradeSafetyPreflightConfig{Enforcement: olmv1.CRDUpgradeSafetyEnforcementNone},
			}}
		})
		e.installed(t, name, "2.0.0")
		e.mustOwn(t, name, gvrConfigMap, ns, "widget-v2")
		crd := e.get(t, gvrCRD, "", "widgets.example.com")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		typ, _, _ := unstructured.NestedString(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "size", "type")
		if typ != "string" {
			t.Errorf("CRD spec.size type = %q after the upgrade, want string", typ)
		}
		e.delete(t, name)
		e.waitGone(t, gvrCRD, "", "widgets.example.com")
		e.waitGone(t, gvrService, ns, "widget-metrics")
	})

	t.Run("OwnNamespace-only bundle needs watchNamespace", func(t *testing.T) {
		const name, ns = "own", "own-ns"
		e.createNamespace(ns)
		e.create(newExtension(name, ns, "own-namespace", ""))
		p := e.progressing(t, name, olmv1.ReasonBlocked, `invalid configuration: required field "watchNamespace" is missing`)
		if p.Status != metav1.ConditionFalse {
			t.Errorf("Progressing status %s, want False", p.Status)
		}
		ce := e.waitFor(t, name, "Installed False", func(ce *olmv1.ClusterExtension) bool {
			return condition(ce, olmv1.TypeInstalled).Reason == olmv1.ReasonFailed
		})
		if ce.Status.Install != nil {
			t.Errorf("status.install = %+v, want none", ce.Status.Install)
		}
		e.update(t, name, func(ce *olmv1.ClusterExtension) {
			raw, _ := json.Marshal(map[string]string{"watchNamespace": ns})
			ce.Spec.Config = &olmv1.ClusterExtensionConfig{ConfigType: olmv1.ClusterExtensionConfigTypeInline, Inline: &olmv1.JSON{}}
			if err := ce.Spec.Config.Inline.UnmarshalJSON(raw); err != nil {
				t.Fatal(err)
			}
		})
		e.installed(t, name, "1.0.0")
		e.mustOwn(t, name, gvrDeployment, ns, "own-namespace-operator")
		e.delete(t, name)
	})

	t.Run("restart mid-way through an install", func(t *testing.T) {
		const name, ns = "midway", "midway-ns"
		e.createNamespace(ns)
		entered := make(chan struct{}, 1)
		e.unpacker.setGate(func(ctx context.Context) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		})
		e.create(newExtension(name, ns, "widget", "1.0.0"))
		select {
		case <-entered:
		case <-time.After(waitTimeout):
			t.Fatal("the install never reached the bundle pull")
		}
		ce, err := e.client.OlmV1().ClusterExtensions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !contains(ce.Finalizers, extension.Finalizer) || meta.IsStatusConditionTrue(ce.Status.Conditions, olmv1.TypeInstalled) {
			t.Fatalf("mid-way state: finalizers %v, conditions %v", ce.Finalizers, ce.Status.Conditions)
		}
		e.stop()
		e.unpacker.setGate(nil)
		e.unpacker.take()
		e.startController(c.AdminConfig)
		e.installed(t, name, "1.0.0")
		depRV := e.mustOwn(t, name, gvrDeployment, ns, "widget-operator").GetResourceVersion()
		rec := e.record(t, name)
		// Two resync periods later nothing was written again: no object, no
		// record, and no pull without the recorded digest.
		time.Sleep(7 * time.Second)
		if rv := e.mustOwn(t, name, gvrDeployment, ns, "widget-operator").GetResourceVersion(); rv != depRV {
			t.Errorf("Deployment rewritten by a resync: %s -> %s", depRV, rv)
		}
		if again := e.record(t, name); !again.Updated.Equal(rec.Updated) {
			t.Errorf("revision record rewritten by a resync: %v -> %v", rec.Updated, again.Updated)
		}
		calls := e.unpacker.take()
		known := 0
		for _, call := range calls {
			if !strings.HasSuffix(call, "known=") {
				known++
			}
		}
		if len(calls) < 2 || known != len(calls)-1 {
			t.Errorf("unpack calls after the restart: %v; want one without a known digest (the install), then only cached ones", calls)
		}
		e.delete(t, name)
	})

	t.Run("a new catalog re-queues waiting extensions", func(t *testing.T) {
		const name, ns = "late", "late-ns"
		e.createNamespace(ns)
		e.create(newExtension(name, ns, "late", ""))
		e.progressing(t, name, olmv1.ReasonRetrying, `no package "late"`)
		_, ref := reg.PushCatalog(t, lateCatalog, "catalogs/late:v1")
		e.serveCatalog("late-catalog", lateCatalog, ref)
		e.installed(t, name, "1.0.0")
		e.delete(t, name)
	})

	t.Run("webhook certificates survive a restart", func(t *testing.T) {
		const name, ns = "hook", "hook-ns"
		e.createNamespace(ns)
		e.create(newExtension(name, ns, "hook", ""))
		e.installed(t, name, "1.0.0")
		secretRV := e.mustOwn(t, name, gvrSecret, ns, "widget-operator-service-cert").GetResourceVersion()
		e.mustOwn(t, name, gvrService, ns, "widget-operator-service")
		hooks := e.owned(t, gvrVWC, name)
		if len(hooks) != 1 {
			t.Fatalf("validating webhook configurations owned: %v, want 1", hooks)
		}
		hookRV := e.get(t, gvrVWC, "", hooks[0]).GetResourceVersion()

		e.stop()
		if err := e.dyn.Resource(gvrConfigMap).Namespace(ns).Delete(context.Background(), "hook-config", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.startController(c.AdminConfig)
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
			return e.get(t, gvrConfigMap, ns, "hook-config") != nil, nil
		})
		if err != nil {
			t.Fatal("hook-config was not recreated after the restart")
		}
		// The ConfigMap is applied before the Secret and the webhook
		// configuration: let that reconcile, and the next resync, finish.
		time.Sleep(7 * time.Second)
		if rv := e.get(t, gvrSecret, ns, "widget-operator-service-cert").GetResourceVersion(); rv != secretRV {
			t.Errorf("certificate Secret re-issued after the restart: %s -> %s", secretRV, rv)
		}
		if rv := e.get(t, gvrVWC, "", hooks[0]).GetResourceVersion(); rv != hookRV {
			t.Errorf("webhook configuration rewritten after the restart: %s -> %s", hookRV, rv)
		}
		e.delete(t, name)
		e.waitGone(t, gvrSecret, ns, "widget-operator-service-cert")
	})

	t.Run("missing namespace is retried until it exists", func(t *testing.T) {
		const name, ns = "no-namespace", "created-later"
		e.create(newExtension(name, ns, "widget", "1.0.0"))
		e.progressing(t, name, olmv1.ReasonRetrying, `namespaces "created-later" not found`)
		// The CRD went first and stays recorded while the rest waits.
		e.mustOwn(t, name, gvrCRD, "", "widgets.example.com")
		e.createNamespace(ns)
		e.installed(t, name, "1.0.0")
		e.delete(t, name)
		e.waitGone(t, gvrCRD, "", "widgets.example.com")
	})

	t.Run("dependency met by another extension's install", func(t *testing.T) {
		const name, ns = "needs", "needs-ns"
		e.createNamespace(ns)
		e.create(newExtension(name, ns, "needs-widget", ""))
		p := e.progressing(t, name, olmv1.ReasonRetrying, `widget`)
		t.Logf("unmet: %s", p.Message)
		e.createNamespace("widget-ns")
		start := time.Now()
		e.create(newExtension("widget", "widget-ns", "widget", "1.0.0"))
		e.installed(t, "widget", "1.0.0")
		t.Logf("widget installed after %s", time.Since(start).Round(time.Millisecond))
		e.installed(t, name, "1.0.0")
		t.Logf("needs-widget installed after %s", time.Since(start).Round(time.Millisecond))
		e.mustOwn(t, name, gvrDeployment, ns, "test-operator")
		e.delete(t, name)
		t.Logf("needs-widget deleted after %s", time.Since(start).Round(time.Millisecond))
		e.delete(t, "widget")
		t.Logf("widget deleted after %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("no target cluster", func(t *testing.T) {
		e.stop()
		e.startController(nil)
		const name = "no-target"
		e.create(newExtension(name, "default", "widget", ""))
		p := e.progressing(t, name, olmv1.ReasonBlocked, extension.NoTargetMessage)
		if p.Status != metav1.ConditionFalse {
			t.Errorf("Progressing status %s, want False", p.Status)
		}
		e.delete(t, name)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
