package clustercatalog

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

// REST is the storage of the clustercatalogs resource.
type REST struct {
	*genericregistry.Store
}

// NewStorage returns the storage of clustercatalogs and clustercatalogs/status
// on the backend given by optsGetter. It fails only when the backend cannot
// be set up for this resource.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *statusrest.REST, error) {
	s, ss := newStrategies(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &olmv1.ClusterCatalog{} },
		NewListFunc:               func() runtime.Object { return &olmv1.ClusterCatalogList{} },
		PredicateFunc:             matcher,
		DefaultQualifiedResource:  olmv1.Resource("clustercatalogs"),
		SingularQualifiedResource: olmv1.Resource("clustercatalog"),

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

// tableConvertor prints the columns of upstream's ClusterCatalog CRD:
// NAME, LASTUNPACKED, SERVING, AGE.
type tableConvertor struct{}

var catalogColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "LastUnpacked", Type: "date", Description: "When the served content was unpacked from its source."},
	{Name: "Serving", Type: "string", Description: "Status of the Serving condition."},
	{Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	now := time.Now()
	return printers.ToTable(obj, catalogColumns, func(o runtime.Object) []interface{} {
		cc := o.(*olmv1.ClusterCatalog)
		return []interface{}{
			cc.Name,
			printers.OptionalAge(cc.Status.LastUnpacked, now),
			printers.ConditionStatus(cc.Status.Conditions, olmv1.TypeServing),
			printers.Age(&cc.CreationTimestamp, now),
		}
	})
}
