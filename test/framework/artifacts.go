package framework

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// FieldManager is the server-side apply field manager of ApplyArtifacts.
const FieldManager = "olm-e2e"

// LocalServer says where the aggregated server of the e2e tests listens: a
// process on 127.0.0.1:Port whose serving certificate is signed by the CA in
// CABundle (PEM).
type LocalServer struct {
	Port     int32
	CABundle []byte
}

// ArtifactsDir returns <repo root>/artifacts.
func ArtifactsDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "artifacts"), nil
}

// LoadArtifacts reads every *.yaml and *.yml file directly in dir (not its
// subfolders, so artifacts/examples is not included), in file-name order,
// splitting multi-document files. Empty documents are skipped. A document
// that does not parse or lacks apiVersion, kind or metadata.name is an error
// naming the file.
func LoadArtifacts(dir string) ([]*unstructured.Unstructured, error) {
	return LoadArtifactsOverlay(dir, "")
}

// LoadArtifactsOverlay is LoadArtifacts for dir with the variant in the
// subfolder overlay laid over it, the way artifacts/ha/README.md says to
// apply it: a file of overlay replaces the file of dir with the same name,
// the other files of both are kept, and all are read in file-name order.
// An empty overlay is dir alone.
func LoadArtifactsOverlay(dir, overlay string) ([]*unstructured.Unstructured, error) {
	dirs := []string{dir}
	if overlay != "" {
		dirs = append(dirs, filepath.Join(dir, overlay))
	}
	paths := map[string]string{} // file name -> path
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
				paths[e.Name()] = filepath.Join(d, e.Name())
			}
		}
	}
	names := make([]string, 0, len(paths))
	for name := range paths {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		path := paths[name]
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := reader.Read()
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" || string(t) == "{}" {
				continue
			}
			u := &unstructured.Unstructured{}
			// UnmarshalJSON keeps integers as int64, as the rest of
			// apimachinery expects; it also requires kind.
			if err := u.UnmarshalJSON(js); err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				return nil, fmt.Errorf("%s: document %d: apiVersion, kind and metadata.name are required", path, i)
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// PrepareArtifacts rewrites the loaded artifacts for a cluster without nodes,
// as issue 9 prescribes, and returns the objects to apply (copies; the input
// is not modified):
//
//   - every APIService must reference a Service (spec.service) that is among
//     the objects; that Service becomes type ExternalName with externalName
//     "localhost" (selector and clusterIP removed, ports kept);
//   - every Deployment in that Service's namespace whose pod template labels
//     match the Service's selector is dropped (the local process replaces it);
//     there must be at least one;
//   - when local is not nil, each APIService's spec.service.port becomes
//     local.Port and spec.caBundle local.CABundle.
//
// It fails when the objects hold no APIService, when a referenced Service is
// missing or has no selector, or when no Deployment backs it.
func PrepareArtifacts(objs []*unstructured.Unstructured, local *LocalServer) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.DeepCopy())
	}
	type ref struct{ namespace, name string }
	services := map[ref]bool{}
	for _, o := range out {
		if o.GroupVersionKind().Group != "apiregistration.k8s.io" || o.GetKind() != "APIService" {
			continue
		}
		ns, _, _ := unstructured.NestedString(o.Object, "spec", "service", "namespace")
		name, _, _ := unstructured.NestedString(o.Object, "spec", "service", "name")
		if ns == "" || name == "" {
			return nil, fmt.Errorf("APIService %s has no spec.service namespace/name", o.GetName())
		}
		services[ref{ns, name}] = true
		if local != nil {
			if err := unstructured.SetNestedField(o.Object, int64(local.Port), "spec", "service", "port"); err != nil {
				return nil, err
			}
			// The API field is []byte: base64 in JSON.
			if err := unstructured.SetNestedField(o.Object, base64.StdEncoding.EncodeToString(local.CABundle), "spec", "caBundle"); err != nil {
				return nil, err
			}
			unstructured.RemoveNestedField(o.Object, "spec", "insecureSkipTLSVerify")
		}
	}
	if len(services) == 0 {
		return nil, errors.New("the artifacts hold no APIService")
	}

	drop := map[*unstructured.Unstructured]bool{}
	for r := range services {
		var svc *unstructured.Unstructured
		for _, o := range out {
			if o.GetAPIVersion() == "v1" && o.GetKind() == "Service" && o.GetNamespace() == r.namespace && o.GetName() == r.name {
				svc = o
			}
		}
		if svc == nil {
			return nil, fmt.Errorf("the APIService's Service %s/%s is not in the artifacts", r.namespace, r.name)
		}
		selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		if len(selector) == 0 {
			return nil, fmt.Errorf("Service %s/%s has no selector, so no Deployment can back it", r.namespace, r.name)
		}
		backed := 0
		for _, o := range out {
			if o.GroupVersionKind().Group != "apps" || o.GetKind() != "Deployment" || o.GetNamespace() != r.namespace {
				continue
			}
			podLabels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			if labels.SelectorFromSet(selector).Matches(labels.Set(podLabels)) {
				drop[o] = true
				backed++
			}
		}
		if backed == 0 {
			return nil, fmt.Errorf("no Deployment in %s has pods selected by Service %s", r.namespace, r.name)
		}
		unstructured.RemoveNestedField(svc.Object, "spec", "selector")
		unstructured.RemoveNestedField(svc.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(svc.Object, "spec", "clusterIPs")
		if err := unstructured.SetNestedField(svc.Object, "ExternalName", "spec", "type"); err != nil {
			return nil, err
		}
		if err := unstructured.SetNestedField(svc.Object, "localhost", "spec", "externalName"); err != nil {
			return nil, err
		}
	}
	kept := out[:0]
	for _, o := range out {
		if !drop[o] {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// ApplyArtifacts loads the manifests of artifacts/, prepares them with
// PrepareArtifacts and applies them to the cluster as the admin with
// server-side apply (field manager FieldManager, conflicts forced), Namespaces
// first, the rest in file order. With local nil (no olm-apiserver running) the
// APIService is only validated by kube-apiserver (server-side dry run), so the
// cluster's discovery is not left with an unavailable group. It returns the
// objects as applied.
func ApplyArtifacts(t testing.TB, c *Cluster, local *LocalServer) []*unstructured.Unstructured {
	t.Helper()
	return ApplyArtifactsOverlay(t, c, local, "")
}

// ApplyArtifactsOverlay is ApplyArtifacts for artifacts/ with the variant in
// artifacts/<overlay> laid over it (LoadArtifactsOverlay), e.g. "ha".
func ApplyArtifactsOverlay(t testing.TB, c *Cluster, local *LocalServer, overlay string) []*unstructured.Unstructured {
	t.Helper()
	dir, err := ArtifactsDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := LoadArtifactsOverlay(dir, overlay)
	if err != nil {
		t.Fatalf("load artifacts: %v", err)
	}
	objs, err = PrepareArtifacts(objs, local)
	if err != nil {
		t.Fatalf("prepare artifacts: %v", err)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		return objs[i].GetKind() == "Namespace" && objs[j].GetKind() != "Namespace"
	})

	groups, err := restmapper.GetAPIGroupResources(c.Client.Discovery())
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatalf("discovery: %v", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("map %s: %v", gvk, err)
		}
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptrTo(true)}
		what := "applied"
		if local == nil && gvk.Kind == "APIService" {
			opts.DryRun = []string{metav1.DryRunAll}
			what = "validated (dry run, no local server)"
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts); err != nil {
			t.Fatalf("apply %s %s: %v", gvk.Kind, objectKey(o), err)
		}
		t.Logf("%s %s %s", what, gvk.Kind, objectKey(o))
	}
	return objs
}

func objectKey(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

func ptrTo[T any](v T) *T { return &v }
