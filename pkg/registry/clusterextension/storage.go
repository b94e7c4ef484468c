package clusterextension

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/registry/printers"
	"github.com/olm-apiserver/olm-apiserver/pkg/registry/statusrest"
)

// REST is the storage of the clusterextensions resource.
type REST struct {
	*genericregistry.Store
}

// NewStorage returns the storage of clusterextensions and
// clusterextensions/status on the backend given by optsGetter. It fails only
// when the backend cannot be set up for this resource.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *statusrest.REST, error) {
	s, ss := newStrategies(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &olmv1.ClusterExtension{} },
		NewListFunc:               func() runtime.Object { return &olmv1.ClusterExtensionList{} },
		PredicateFunc:             matcher,
		DefaultQualifiedResource:  olmv1.Resource("clusterextensions"),
		SingularQualifiedResource: olmv1.Resource("clusterextension"),

		CreateStrategy:      s,
		UpdateStrategy:      s,
		DeleteStrategy:      s,
		ResetFieldsStrategy: s,

		TableConvertor: tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, nil, err
	}
	return &REST{store}, statusrest.New(store, ss), nil
}

// tableConvertor prints the columns of upstream's ClusterExtension CRD:
// NAME, INSTALLED BUNDLE, VERSION, INSTALLED, PROGRESSING, AGE.
type tableConvertor struct{}

var extensionColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Installed Bundle", Type: "string", Description: "Name of the installed bundle."},
	{Name: "Version", Type: "string", Description: "Version of the installed bundle."},
	{Name: "Installed", Type: "string", Description: "Status of the Installed condition."},
	{Name: "Progressing", Type: "string", Description: "Status of the Progressing condition."},
	{Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	now := time.Now()
	return printers.ToTable(obj, extensionColumns, func(o runtime.Object) []interface{} {
		ce := o.(*olmv1.ClusterExtension)
		var bundle, version string
		if in := ce.Status.Install; in != nil {
			bundle, version = in.Bundle.Name, in.Bundle.Version
		}
		return []interface{}{
			ce.Name, bundle, version,
			printers.ConditionStatus(ce.Status.Conditions, olmv1.TypeInstalled),
			printers.ConditionStatus(ce.Status.Conditions, olmv1.TypeProgressing),
			printers.Age(&ce.CreationTimestamp, now),
		}
	})
}
