// Package clustercatalog is the REST storage of ClusterCatalog: the
// genericregistry.Store with its create/update/delete strategy, the status
// subresource, the table convertor and the content subresource.
package clustercatalog

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1/validation"
)

// strategy is the create/update/delete strategy of the main resource: it
// never writes status, moves metadata.generation on spec changes only, and
// keeps the olm.operatorframework.io/metadata.name label equal to the name.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// statusStrategy is the update strategy of the status subresource: it never
// writes spec (nor labels or annotations).
type statusStrategy struct {
	strategy
}

func newStrategies(typer runtime.ObjectTyper) (strategy, statusStrategy) {
	s := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
	return s, statusStrategy{strategy: s}
}

func (strategy) NamespaceScoped() bool { return false }

// GetResetFields says which fields server-side apply must not take from a
// request to the main resource: status.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(olmv1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func setNameLabel(cc *olmv1.ClusterCatalog) {
	if cc.Labels == nil {
		cc.Labels = map[string]string{}
	}
	cc.Labels[olmv1.MetadataNameLabel] = cc.Name
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	cc := obj.(*olmv1.ClusterCatalog)
	cc.Status = olmv1.ClusterCatalogStatus{}
	cc.Generation = 1
	setNameLabel(cc)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	cc, oldCC := obj.(*olmv1.ClusterCatalog), old.(*olmv1.ClusterCatalog)
	cc.Status = oldCC.Status
	if !apiequality.Semantic.DeepEqual(cc.Spec, oldCC.Spec) {
		cc.Generation = oldCC.Generation + 1
	}
	setNameLabel(cc)
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateClusterCatalog(obj.(*olmv1.ClusterCatalog))
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (strategy) Canonicalize(runtime.Object) {}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterCatalogUpdate(obj.(*olmv1.ClusterCatalog), old.(*olmv1.ClusterCatalog))
}

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetResetFields of the status subresource: everything but status.
func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(olmv1.SchemeGroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("metadata", "annotations"),
		),
	}
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	cc, oldCC := obj.(*olmv1.ClusterCatalog), old.(*olmv1.ClusterCatalog)
	cc.Spec = oldCC.Spec
	cc.Labels = oldCC.Labels
	cc.Annotations = oldCC.Annotations
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterCatalogStatusUpdate(obj.(*olmv1.ClusterCatalog), old.(*olmv1.ClusterCatalog))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and fields (metadata.name) of a ClusterCatalog
// for list/watch selectors.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	cc, ok := obj.(*olmv1.ClusterCatalog)
	if !ok {
		return nil, nil, fmt.Errorf("not a ClusterCatalog: %T", obj)
	}
	return cc.Labels, generic.ObjectMetaFieldsSet(&cc.ObjectMeta, false), nil
}

// matcher is the selection predicate for list and watch.
func matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
