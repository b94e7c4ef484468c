// Package applier puts the objects of one ClusterExtension revision on a
// cluster and takes them off again.
//
// Every object is written with server-side apply under one field manager
// (conflicts forced, since the extension owns its objects) and carries the
// label OwnerLabel=<ClusterExtension name>. That label is the ownership record
// on the cluster: an object that already exists without it, or with another
// extension's name, is never adopted; Apply fails with a *ConflictError naming
// it and applies nothing. CustomResourceDefinitions are applied first and
// waited for until they are Established, then everything else (issue 8,
// "apply"). Prune and Delete remove objects by reference, but only while they
// still carry this extension's label.
package applier

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// OwnerLabel is set on every applied object to the name of the owning
// ClusterExtension.
const OwnerLabel = "olm.operatorframework.io/owner-name"

// DefaultFieldManager is the server-side apply field manager of the server.
const DefaultFieldManager = "olm-apiserver"

// DefaultEstablishTimeout bounds the wait for applied CRDs to be Established.
const DefaultEstablishTimeout = 60 * time.Second

var crdGK = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// Ref identifies one applied object: its API group, version, kind, namespace
// ("" for cluster-scoped objects) and name. It is what a revision record keeps.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// RefOf returns the Ref of u.
func RefOf(u *unstructured.Unstructured) Ref {
	gvk := u.GroupVersionKind()
	return Ref{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// String renders r as "Kind.group/name" or "Kind.group namespace/name"
// (core kinds without ".group"), the form used in messages.
func (r Ref) String() string {
	k := r.Kind
	if r.Group != "" {
		k += "." + r.Group
	}
	if r.Namespace == "" {
		return k + " " + r.Name
	}
	return k + " " + r.Namespace + "/" + r.Name
}

// key identifies the object regardless of the API version it is served in.
func (r Ref) key() string {
	return r.Group + "|" + r.Kind + "|" + r.Namespace + "|" + r.Name
}

// IsCRD reports whether r is a CustomResourceDefinition.
func (r Ref) IsCRD() bool { return r.Group == crdGK.Group && r.Kind == crdGK.Kind }

// PruneSet returns the refs of old that are not in keep (same group, kind,
// namespace and name; the version does not matter), in the order Delete
// removes them: everything but CRDs first (reverse of old's order), CRDs last.
func PruneSet(old, keep []Ref) []Ref {
	kept := make(map[string]bool, len(keep))
	for _, r := range keep {
		kept[r.key()] = true
	}
	var out []Ref
	seen := map[string]bool{}
	for _, r := range old {
		if kept[r.key()] || seen[r.key()] {
			continue
		}
		seen[r.key()] = true
		out = append(out, r)
	}
	return deleteOrder(out)
}

// Union returns a followed by the refs of b not in a (by group, kind,
// namespace and name).
func Union(a, b []Ref) []Ref {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]Ref, 0, len(a)+len(b))
	for _, list := range [][]Ref{a, b} {
		for _, r := range list {
			if !seen[r.key()] {
				seen[r.key()] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// deleteOrder puts non-CRDs first (in reverse order, so that objects applied
// last go first) and CRDs last: deleting a CRD deletes its custom resources,
// which the operator's other objects may still be handling.
func deleteOrder(refs []Ref) []Ref {
	if len(refs) == 0 {
		return nil
	}
	out := make([]Ref, 0, len(refs))
	for i := len(refs) - 1; i >= 0; i-- {
		if !refs[i].IsCRD() {
			out = append(out, refs[i])
		}
	}
	for _, r := range refs {
		if r.IsCRD() {
			out = append(out, r)
		}
	}
	return out
}

// ConflictError says that objects to apply already exist on the cluster and
// belong to someone else. Nothing was applied.
type ConflictError struct {
	Owner     string
	Conflicts []Conflict
}

// Conflict is one existing object that is not owned by the extension.
type Conflict struct {
	Ref Ref
	// CurrentOwner is the value of OwnerLabel on the live object ("" when the
	// object has no such label).
	CurrentOwner string
}

// String says who owns the object.
func (c Conflict) String() string {
	if c.CurrentOwner == "" {
		return fmt.Sprintf("%s already exists and is not managed by any ClusterExtension", c.Ref)
	}
	return fmt.Sprintf("%s already exists and is owned by ClusterExtension %q", c.Ref, c.CurrentOwner)
}

func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		parts[i] = c.String()
	}
	return "refusing to adopt existing objects: " + strings.Join(parts, "; ")
}

// CheckOwnership returns the conflicts among objs and their live versions:
// live[i] is the object on the cluster for objs[i], nil when there is none.
// A live object is a conflict unless its OwnerLabel equals owner.
func CheckOwnership(owner string, objs []unstructured.Unstructured, live []*unstructured.Unstructured) []Conflict {
	var out []Conflict
	for i := range objs {
		if live[i] == nil {
			continue
		}
		if cur := live[i].GetLabels()[OwnerLabel]; cur != owner {
			out = append(out, Conflict{Ref: RefOf(&objs[i]), CurrentOwner: cur})
		}
	}
	return out
}

// Applier applies, prunes and deletes the objects of ClusterExtensions on
// one cluster.
type Applier struct {
	// Client is the dynamic client of the target cluster.
	Client dynamic.Interface
	// Mapper maps kinds to resources. It is reset (when it implements
	// meta.ResettableRESTMapper) after CRDs become Established and whenever a
	// kind is not found.
	Mapper meta.RESTMapper
	// FieldManager is the server-side apply field manager (default
	// DefaultFieldManager).
	FieldManager string
	// EstablishTimeout bounds the wait for CRDs (default DefaultEstablishTimeout).
	EstablishTimeout time.Duration
}

func (a *Applier) fieldManager() string {
	if a.FieldManager == "" {
		return DefaultFieldManager
	}
	return a.FieldManager
}

// resource returns the dynamic resource interface for a kind, resetting the
// mapper once when the kind is unknown (e.g. a CRD that was just created).
func (a *Applier) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	m, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		if r, ok := a.Mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			m, err = a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.Client.Resource(m.Resource).Namespace(namespace), nil
	}
	return a.Client.Resource(m.Resource), nil
}

// Get returns the live object for ref, nil when it does not exist (or its
// kind is not served).
func (a *Applier) Get(ctx context.Context, ref Ref) (*unstructured.Unstructured, error) {
	ri, err := a.resource(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}, ref.Namespace)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	return u, nil
}

// Apply applies objs for the ClusterExtension owner and returns their refs
// in apply order.
//
// First every object is read from the cluster; when any exists without
// OwnerLabel=owner, Apply returns a *ConflictError listing all of them and
// writes nothing. Then the CRDs among objs are applied and, when they were
// created or changed, waited for until they are Established (at most
// EstablishTimeout), then the other objects,
// in the order given. Each object is labelled OwnerLabel=owner (objs is not
// modified) and written with server-side apply, conflicts forced, so fields
// changed by hand are set back. Errors name the object at fault; objects
// applied before the error stay applied (the caller records them).
func (a *Applier) Apply(ctx context.Context, owner string, objs []unstructured.Unstructured) ([]Ref, error) {
	live := make([]*unstructured.Unstructured, len(objs))
	for i := range objs {
		u, err := a.Get(ctx, RefOf(&objs[i]))
		if err != nil {
			return nil, err
		}
		live[i] = u
	}
	if c := CheckOwnership(owner, objs, live); len(c) > 0 {
		return nil, &ConflictError{Owner: owner, Conflicts: c}
	}

	var crds, rest []*unstructured.Unstructured
	liveCRD := map[string]*unstructured.Unstructured{}
	for i := range objs {
		o := objs[i].DeepCopy()
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[OwnerLabel] = owner
		o.SetLabels(labels)
		if o.GroupVersionKind().GroupKind() == crdGK {
			crds = append(crds, o)
			liveCRD[o.GetName()] = live[i]
		} else {
			rest = append(rest, o)
		}
	}
	var applied []Ref
	// CRDs that were created or changed, or are not Established yet, are
	// waited for; then the mapper learns their kinds.
	var changed []*unstructured.Unstructured
	for _, o := range crds {
		res, err := a.applyOne(ctx, o)
		if err != nil {
			return applied, err
		}
		applied = append(applied, RefOf(o))
		if old := liveCRD[o.GetName()]; old == nil || old.GetResourceVersion() != res.GetResourceVersion() || !established(res) {
			changed = append(changed, o)
		}
	}
	if len(changed) > 0 {
		if err := a.waitEstablished(ctx, changed); err != nil {
			return applied, err
		}
		if r, ok := a.Mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
	}
	for _, o := range rest {
		if _, err := a.applyOne(ctx, o); err != nil {
			return applied, err
		}
		applied = append(applied, RefOf(o))
	}
	return applied, nil
}

func (a *Applier) applyOne(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ref := RefOf(o)
	ri, err := a.resource(o.GroupVersionKind(), o.GetNamespace())
	if err != nil {
		return nil, fmt.Errorf("applying %s: %w", ref, err)
	}
	res, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: a.fieldManager(), Force: true})
	if err != nil {
		return nil, fmt.Errorf("applying %s: %w", ref, err)
	}
	return res, nil
}

// waitEstablished polls the CRDs until each has condition Established=True.
func (a *Applier) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	timeout := a.EstablishTimeout
	if timeout <= 0 {
		timeout = DefaultEstablishTimeout
	}
	ri, err := a.resource(crds[0].GroupVersionKind(), "")
	if err != nil {
		return err
	}
	pending := map[string]bool{}
	for _, c := range crds {
		pending[c.GetName()] = true
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for name := range pending {
			u, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return false, err
			}
			if established(u) {
				delete(pending, name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		names := make([]string, 0, len(pending))
		for n := range pending {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("CustomResourceDefinitions not Established after %s: %s: %w", timeout, strings.Join(names, ", "), err)
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// Delete deletes the objects refs names, in the given order (see PruneSet
// for the order it produces), with background propagation. An object that
// is gone, whose kind is no longer served, or that no longer carries
// OwnerLabel=owner (someone else took it over) is skipped. It returns the
// refs it skipped because of another owner, and the first error, after
// trying every object.
func (a *Applier) Delete(ctx context.Context, owner string, refs []Ref) (skipped []Ref, err error) {
	var errs []error
	for _, r := range refs {
		u, gerr := a.Get(ctx, r)
		if gerr != nil {
			errs = append(errs, gerr)
			continue
		}
		if u == nil {
			continue
		}
		if u.GetLabels()[OwnerLabel] != owner {
			skipped = append(skipped, r)
			continue
		}
		ri, rerr := a.resource(u.GroupVersionKind(), r.Namespace)
		if rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		policy := metav1.DeletePropagationBackground
		uid := u.GetUID()
		derr := ri.Delete(ctx, r.Name, metav1.DeleteOptions{
			PropagationPolicy: &policy,
			Preconditions:     &metav1.Preconditions{UID: &uid},
		})
		if derr != nil && !apierrors.IsNotFound(derr) && !apierrors.IsConflict(derr) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", r, derr))
		}
	}
	return skipped, errors.Join(errs...)
}
