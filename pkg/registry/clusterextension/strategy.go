// Package clusterextension is the REST storage of ClusterExtension: the
// genericregistry.Store with its strategy, the status subresource and the
// table convertor.
package clusterextension

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

// strategy is the strategy of the main resource: it never writes status and
// moves metadata.generation on spec changes only.
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

// GetResetFields: server-side apply to the main resource never takes status.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(olmv1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ce := obj.(*olmv1.ClusterExtension)
	ce.Status = olmv1.ClusterExtensionStatus{}
	ce.Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ce, oldCE := obj.(*olmv1.ClusterExtension), old.(*olmv1.ClusterExtension)
	ce.Status = oldCE.Status
	if !apiequality.Semantic.DeepEqual(ce.Spec, oldCE.Spec) {
		ce.Generation = oldCE.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateClusterExtension(obj.(*olmv1.ClusterExtension))
}

// WarningsOnCreate warns about the deprecated, ignored spec.serviceAccount.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return warnings(obj.(*olmv1.ClusterExtension))
}

func warnings(ce *olmv1.ClusterExtension) []string {
	if ce.Spec.ServiceAccount != nil {
		return []string{"spec.serviceAccount is deprecated and ignored: olm-apiserver installs with its own identity"}
	}
	return nil
}

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (strategy) Canonicalize(runtime.Object) {}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterExtensionUpdate(obj.(*olmv1.ClusterExtension), old.(*olmv1.ClusterExtension))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return warnings(obj.(*olmv1.ClusterExtension))
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
	ce, oldCE := obj.(*olmv1.ClusterExtension), old.(*olmv1.ClusterExtension)
	ce.Spec = oldCE.Spec
	ce.Labels = oldCE.Labels
	ce.Annotations = oldCE.Annotations
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterExtensionStatusUpdate(obj.(*olmv1.ClusterExtension), old.(*olmv1.ClusterExtension))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and fields (metadata.name) of a
// ClusterExtension for list/watch selectors.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ce, ok := obj.(*olmv1.ClusterExtension)
	if !ok {
		return nil, nil, fmt.Errorf("not a ClusterExtension: %T", obj)
	}
	return ce.Labels, generic.ObjectMetaFieldsSet(&ce.ObjectMeta, false), nil
}

func matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
