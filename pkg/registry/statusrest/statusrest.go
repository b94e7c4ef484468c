// Package statusrest serves the status subresource of a resource from a copy
// of its genericregistry.Store whose update strategy only writes status.
package statusrest

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusStrategy is what a status subresource needs from its strategy.
type StatusStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// REST is the storage of a status subresource.
type REST struct {
	store *genericregistry.Store
}

// New returns the status storage for main: a shallow copy of main's store
// whose update strategy is strategy. It shares main's backend.
func New(main *genericregistry.Store, strategy StatusStrategy) *REST {
	s := *main
	s.UpdateStrategy = strategy
	s.ResetFieldsStrategy = strategy
	return &REST{store: &s}
}

var (
	_ rest.Getter              = &REST{}
	_ rest.Updater             = &REST{}
	_ rest.ResetFieldsStrategy = &REST{}
	_ rest.TableConvertor      = &REST{}
)

// New returns an empty object of the resource.
func (r *REST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main store owns the backend.
func (r *REST) Destroy() {}

// Get returns the object, for status reads.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the status of an existing object; it never creates one.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields the status subresource never writes.
func (r *REST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints status reads like the main resource.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
