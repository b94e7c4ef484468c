// Package bboltstore implements k8s.io/apiserver's storage.Interface (v0.37.2)
// on the bbolt core in pkg/storage/kv, so that genericregistry.Store can keep
// objects in a local file instead of etcd. Behaviour follows the stock etcd3
// backend (k8s.io/apiserver/pkg/storage/etcd3): resourceVersion is the global
// revision, reads at an exact revision and continue tokens work until the
// revision is compacted, errors are the same apierrors (404 NotFound,
// 409 AlreadyExists/Conflict, 410 Expired/Gone, 504 "Too large resource
// version"), and watches start from a revision, from "now", or with initial
// events. NewRESTOptionsGetter with WithWatchCache puts the stock watch cache
// (k8s.io/apiserver/pkg/storage/cacher) in front of it, as for etcd3.
package bboltstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"
	encryptidentity "k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

// Config is what one Store (one resource) needs.
type Config struct {
	// Codec encodes objects to their stored form and decodes them back.
	Codec runtime.Codec
	// Transformer is applied to the encoded bytes on their way to and from
	// the file (encryption at rest); nil means identity (plaintext; a value
	// written encrypted is refused on read, as with etcd3).
	Transformer value.Transformer
	// NewFunc and NewListFunc create empty objects of the resource; NewFunc
	// is required for progress notifications and bookmarks.
	NewFunc     func() runtime.Object
	NewListFunc func() runtime.Object
	// ResourcePrefix is the key prefix every key of this resource starts
	// with, e.g. "/olm.operatorframework.io/clustercatalogs".
	ResourcePrefix string
	// GroupResource names the resource in errors.
	GroupResource schema.GroupResource
	// TTLSlack is added to object TTLs (Create/GuaranteedUpdate with ttl>0),
	// like the lease reuse window of etcd3; zero means 5s. TTLs are kept in
	// memory: an object whose TTL had not run out when the process stopped
	// stays until deleted.
	TTLSlack time.Duration
	// Bookmarks makes watches that allow bookmarks receive one every
	// kv.Options.ProgressInterval (the job the watch cache does on etcd).
	Bookmarks bool
}

// Store is a storage.Interface for one resource on a shared kv.DB.
type Store struct {
	db             *kv.DB
	codec          runtime.Codec
	versioner      storage.APIObjectVersioner
	newFunc        func() runtime.Object
	newListFunc    func() runtime.Object
	resourcePrefix string
	groupResource  schema.GroupResource
	bookmarks      bool
	ttlSlack       time.Duration

	mu          sync.RWMutex
	transformer value.Transformer

	sizeEstimation atomic.Bool

	// onListRange, when set (tests only), is told of every range read of
	// GetList before it runs: where it starts, at which revision (0: the
	// current one) and with which chunk limit (0: none).
	onListRange func(ctx context.Context, start string, rev, limit int64)
}

var _ storage.Interface = &Store{}

// New returns the Store of one resource. Errors: nil db or codec, or an
// empty resource prefix.
func New(db *kv.DB, cfg Config) (*Store, error) {
	if db == nil || cfg.Codec == nil {
		return nil, errors.New("bboltstore: db and codec are required")
	}
	if cfg.ResourcePrefix == "" || cfg.ResourcePrefix == "/" {
		return nil, fmt.Errorf("bboltstore: invalid resource prefix %q", cfg.ResourcePrefix)
	}
	slack := cfg.TTLSlack
	if slack <= 0 {
		slack = 5 * time.Second
	}
	t := cfg.Transformer
	if t == nil {
		// As the etcd3 backend: stores plaintext, and refuses to read a
		// value written encrypted ("k8s:enc:" prefix) instead of handing
		// ciphertext to the decoder.
		t = encryptidentity.NewEncryptCheckTransformer()
	}
	return &Store{
		db:             db,
		codec:          cfg.Codec,
		newFunc:        cfg.NewFunc,
		newListFunc:    cfg.NewListFunc,
		resourcePrefix: cfg.ResourcePrefix,
		groupResource:  cfg.GroupResource,
		bookmarks:      cfg.Bookmarks,
		ttlSlack:       slack,
		transformer:    t,
	}, nil
}

// keyContext binds transformed values to their key (authenticated data), as
// the etcd3 backend does.
type keyContext string

func (k keyContext) AuthenticatedData() []byte { return []byte(k) }

// Transformer returns the value transformer in use.
func (s *Store) Transformer() value.Transformer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.transformer
}

// SetTransformer replaces the value transformer (used by tests that inject
// failures, and by key rotation).
func (s *Store) SetTransformer(t value.Transformer) {
	if t == nil {
		t = encryptidentity.NewEncryptCheckTransformer()
	}
	s.mu.Lock()
	s.transformer = t
	s.mu.Unlock()
}

// Versioner implements storage.Interface.
func (s *Store) Versioner() storage.Versioner { return s.versioner }

func (s *Store) prepareKey(key string, recursive bool) (string, error) {
	return storage.PrepareKey(s.resourcePrefix, key, recursive)
}

func (s *Store) decode(data []byte, out runtime.Object, rev int64) error {
	if _, err := conversion.EnforcePtr(out); err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %v", err)
	}
	if _, _, err := s.codec.Decode(data, nil, out); err != nil {
		return err
	}
	if err := s.versioner.UpdateObject(out, uint64(rev)); err != nil {
		utilruntime.HandleError(fmt.Errorf("bboltstore: setting resourceVersion: %w", err))
	}
	return nil
}

func (s *Store) validateMinimumResourceVersion(minimum string, actual int64) error {
	if minimum == "" {
		return nil
	}
	m, err := s.versioner.ParseResourceVersion(minimum)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	if m > uint64(actual) {
		return storage.NewTooLargeResourceVersionError(m, uint64(actual), 0)
	}
	return nil
}

// Get implements storage.Interface: reads the current object; a
// ResourceVersion newer than the store's answers "Too large resource version".
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	k, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	cur, rev, err := s.db.Get(k)
	if err != nil {
		return storage.NewInternalError(err)
	}
	if err := s.validateMinimumResourceVersion(opts.ResourceVersion, rev); err != nil {
		return err
	}
	if cur == nil {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewKeyNotFoundError(k, 0)
	}
	data, _, err := s.Transformer().TransformFromStorage(ctx, cur.Value, keyContext(k))
	if err != nil {
		return storage.NewInternalError(err)
	}
	return s.decode(data, out, cur.ModRevision)
}

// expire deletes key ttl seconds (plus the slack) from now unless it was
// written again since revision rev.
func (s *Store) expire(key string, rev int64, ttl uint64) {
	time.AfterFunc(time.Duration(ttl)*time.Second+s.ttlSlack, func() {
		_, _ = s.db.Write(context.Background(), kv.Op{Kind: kv.OpDelete, Key: key, IfModRevision: rev})
	})
}

// Create implements storage.Interface. ttl>0 deletes the object after ttl
// seconds (see Config.TTLSlack).
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	k, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	if v, err := s.versioner.ObjectResourceVersion(obj); err == nil && v != 0 {
		return storage.ErrResourceVersionSetOnCreate
	}
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return fmt.Errorf("PrepareObjectForStorage failed: %v", err)
	}
	data, err := runtime.Encode(s.codec, obj)
	if err != nil {
		return err
	}
	stored, err := s.Transformer().TransformToStorage(ctx, data, keyContext(k))
	if err != nil {
		return storage.NewInternalError(err)
	}
	res, err := s.db.Write(ctx, kv.Op{Kind: kv.OpPut, Key: k, Value: stored, IfModRevision: 0})
	if err != nil {
		return storage.NewInternalError(err)
	}
	if !res.Succeeded {
		return storage.NewKeyExistsError(k, 0)
	}
	if ttl > 0 {
		s.expire(k, res.Revision, ttl)
	}
	if out != nil {
		return s.decode(data, out, res.Revision)
	}
	return nil
}

// objState is an object as read (or as taken from a cached copy).
type objState struct {
	obj   runtime.Object
	meta  storage.ResponseMeta
	rev   int64
	data  []byte // decoded bytes (after the transformer)
	stale bool
}

func (s *Store) newObject(v reflect.Value) runtime.Object {
	if u, ok := v.Addr().Interface().(runtime.Unstructured); ok {
		return u.NewEmptyInstance()
	}
	return reflect.New(v.Type()).Interface().(runtime.Object)
}

// stateOf builds an objState from a stored value (nil: absent). With
// expectBroken (unsafe deletion of malformed objects) a value that fails to
// transform or decode yields a state without obj, and one that decodes fine
// is refused.
func (s *Store) stateOf(ctx context.Context, cur *kv.KeyValue, key string, v reflect.Value, ignoreNotFound, expectBroken bool) (*objState, error) {
	st := &objState{obj: s.newObject(v)}
	if cur == nil {
		if !ignoreNotFound {
			return nil, storage.NewKeyNotFoundError(key, 0)
		}
		if err := runtime.SetZeroValue(st.obj); err != nil {
			return nil, err
		}
		return st, nil
	}
	st.rev = cur.ModRevision
	st.meta.ResourceVersion = uint64(cur.ModRevision)
	data, stale, err := s.Transformer().TransformFromStorage(ctx, cur.Value, keyContext(key))
	if err != nil {
		if !expectBroken {
			return nil, storage.NewInternalError(err)
		}
		st.obj = nil
		st.stale = true
		return st, nil
	}
	st.data, st.stale = data, stale
	if err := s.decode(data, st.obj, st.rev); err != nil {
		if !expectBroken {
			return nil, err
		}
		st.obj = nil
		return st, nil
	}
	if expectBroken {
		return nil, storage.NewInvalidObjError(key, "unsafe deletion is not allowed because the object is decodable from storage")
	}
	return st, nil
}

func (s *Store) currentState(ctx context.Context, key string, v reflect.Value, ignoreNotFound, expectBroken bool) (*objState, error) {
	cur, _, err := s.db.Get(key)
	if err != nil {
		return nil, storage.NewInternalError(err)
	}
	return s.stateOf(ctx, cur, key, v, ignoreNotFound, expectBroken)
}

// stateFromCached builds a state from a caller-supplied (possibly stale) copy.
func (s *Store) stateFromCached(obj runtime.Object) (*objState, error) {
	rv, err := s.versioner.ObjectResourceVersion(obj)
	if err != nil {
		return nil, fmt.Errorf("couldn't get resource version: %v", err)
	}
	st := &objState{obj: obj, rev: int64(rv)}
	st.meta.ResourceVersion = rv
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return nil, fmt.Errorf("PrepareObjectForStorage failed: %v", err)
	}
	if st.data, err = runtime.Encode(s.codec, obj); err != nil {
		return nil, err
	}
	_ = s.versioner.UpdateObject(obj, rv)
	return st, nil
}

// Delete implements storage.Interface: deletes key if preconditions and
// validateDeletion pass on its current state, retrying on concurrent changes.
func (s *Store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	k, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(out)
	if err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %v", err)
	}
	expectBroken := utilfeature.DefaultFeatureGate.Enabled(features.AllowUnsafeMalformedObjectDeletion) && opts.ExpectTransformOrDecodeError

	var st *objState
	current := false
	if cachedExistingObject != nil && !expectBroken {
		st, err = s.stateFromCached(cachedExistingObject)
	} else {
		st, err = s.currentState(ctx, k, v, false, expectBroken)
		current = true
	}
	if err != nil {
		return err
	}
	// recheck re-reads a possibly stale state after a check failed: it
	// returns the check error when the state was current after all.
	recheck := func(checkErr error) (bool, error) {
		if current {
			return false, checkErr
		}
		oldRev := st.rev
		st, err = s.currentState(ctx, k, v, false, expectBroken)
		if err != nil {
			return false, err
		}
		current = true
		if st.rev == oldRev {
			return false, checkErr
		}
		return true, nil
	}
	for {
		if preconditions != nil {
			if err := preconditions.Check(k, st.obj); err != nil {
				if retry, err := recheck(err); !retry {
					return err
				}
				continue
			}
		}
		if err := validateDeletion(ctx, st.obj); err != nil {
			if retry, err := recheck(err); !retry {
				return err
			}
			continue
		}
		res, err := s.db.Write(ctx, kv.Op{Kind: kv.OpDelete, Key: k, IfModRevision: st.rev})
		if err != nil {
			return storage.NewInternalError(err)
		}
		if !res.Succeeded {
			st, err = s.stateOf(ctx, res.Current, k, v, false, expectBroken)
			if err != nil {
				return err
			}
			current = true
			continue
		}
		if !expectBroken {
			return s.decode(st.data, out, res.Revision)
		}
		return nil
	}
}

// GuaranteedUpdate implements storage.Interface: applies tryUpdate to the
// current object and writes the result if nothing changed meanwhile,
// retrying otherwise. An update that does not change the stored bytes writes
// nothing and keeps the resourceVersion (as etcd3 does).
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	k, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(destination)
	if err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %v", err)
	}
	var st *objState
	current := false
	if cachedExistingObject != nil {
		st, err = s.stateFromCached(cachedExistingObject)
	} else {
		st, err = s.currentState(ctx, k, v, ignoreNotFound, false)
		current = true
	}
	if err != nil {
		return err
	}
	refresh := func() error {
		st, err = s.currentState(ctx, k, v, ignoreNotFound, false)
		current = true
		return err
	}
	for {
		if err := preconditions.Check(k, st.obj); err != nil {
			if current {
				return err
			}
			if err := refresh(); err != nil {
				return err
			}
			continue
		}
		ret, ttlPtr, err := tryUpdate(st.obj, st.meta)
		if err == nil {
			err = s.versioner.PrepareObjectForStorage(ret)
			if err != nil {
				err = fmt.Errorf("PrepareObjectForStorage failed: %v", err)
			}
		}
		if err != nil {
			if current {
				return err
			}
			oldRev := st.rev
			if rerr := refresh(); rerr != nil {
				return rerr
			}
			if st.rev == oldRev {
				return err
			}
			continue
		}
		data, err := runtime.Encode(s.codec, ret)
		if err != nil {
			return err
		}
		if !st.stale && string(data) == string(st.data) {
			// Nothing to write, provided the state we compared with is current.
			if !current {
				if err := refresh(); err != nil {
					return err
				}
				if string(data) != string(st.data) {
					continue
				}
			}
			if !st.stale {
				return s.decode(st.data, destination, st.rev)
			}
		}
		stored, err := s.Transformer().TransformToStorage(ctx, data, keyContext(k))
		if err != nil {
			return storage.NewInternalError(err)
		}
		res, err := s.db.Write(ctx, kv.Op{Kind: kv.OpPut, Key: k, Value: stored, IfModRevision: st.rev})
		if err != nil {
			return storage.NewInternalError(err)
		}
		if !res.Succeeded {
			st, err = s.stateOf(ctx, res.Current, k, v, ignoreNotFound, false)
			if err != nil {
				return err
			}
			current = true
			continue
		}
		if ttlPtr != nil && *ttlPtr > 0 {
			s.expire(k, res.Revision, *ttlPtr)
		}
		return s.decode(data, destination, res.Revision)
	}
}

func newItemFunc(listObj runtime.Object, v reflect.Value) func() runtime.Object {
	if ul, ok := listObj.(*unstructured.UnstructuredList); ok {
		if apiVersion := ul.GetAPIVersion(); apiVersion != "" {
			return func() runtime.Object {
				return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion}}
			}
		}
	}
	elem := v.Type().Elem()
	return func() runtime.Object { return reflect.New(elem).Interface().(runtime.Object) }
}

const (
	listExpired         = "The resourceVersion for the provided list is too old."
	listContinueExpired = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter."
	listInconsistentContinue = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
)

// listReadError maps core read errors to the apierrors etcd3 answers with.
func (s *Store) listReadError(err error, withRev int64, paging bool, continueKey, keyPrefix string) error {
	switch {
	case errors.Is(err, kv.ErrFutureRevision):
		return storage.NewTooLargeResourceVersionError(uint64(withRev), uint64(s.db.Revision()), 0)
	case errors.Is(err, kv.ErrCompacted):
		if !paging {
			return apierrors.NewResourceExpired(listExpired)
		}
		// A token at revision -1 continues at the latest revision.
		token, terr := storage.EncodeContinue(continueKey, keyPrefix, -1)
		if terr != nil {
			return apierrors.NewResourceExpired(listContinueExpired)
		}
		se := apierrors.NewResourceExpired(listInconsistentContinue)
		se.ErrStatus.ListMeta.Continue = token
		return se
	}
	return err
}

// GetList implements storage.Interface: lists key (Recursive: every key
// under it) at the current or the requested revision, filtered by the
// predicate, paged by Limit/Continue with etcd3's continue tokens and
// remainingItemCount.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	keyPrefix, err := s.prepareKey(key, opts.Recursive)
	if err != nil {
		return err
	}
	listPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(listPtr)
	if err != nil || v.Kind() != reflect.Slice {
		return fmt.Errorf("need ptr to slice: %v", err)
	}
	withRev, continueKey, err := storage.ValidateListOptions(keyPrefix, s.versioner, opts)
	if err != nil {
		return err
	}
	pred := opts.Predicate
	limit := pred.Limit
	paging := limit > 0
	newItem := newItemFunc(listObj, v)
	transformer := s.Transformer()

	// Values are read in chunks inside short read transactions and
	// transformed/decoded outside of them: a transformer may do anything,
	// writes included, and must not hold up the writer.
	chunkSize := int64(0) // unlimited
	if paging {
		chunkSize = limit
	}
	start := continueKey
	var lastKey string
	var afterLast int64 // keys after lastKey, when the list stops early
	hasMore := false
	for {
		var items []kv.KeyValue
		stopped := false
		if s.onListRange != nil {
			from := start
			if from == "" {
				from = keyPrefix
			}
			s.onListRange(ctx, from, withRev, chunkSize)
		}
		res, err := s.db.Range(kv.RangeOptions{Prefix: keyPrefix, Exact: !opts.Recursive, Start: start, Revision: withRev},
			func(item kv.KeyValue) (bool, error) {
				if chunkSize > 0 && int64(len(items)) >= chunkSize {
					stopped = true
					return false, nil
				}
				items = append(items, item)
				return true, nil
			})
		if err != nil {
			if errors.Is(err, kv.ErrCompacted) || errors.Is(err, kv.ErrFutureRevision) {
				return s.listReadError(err, withRev, len(pred.Continue) > 0, continueKey, keyPrefix)
			}
			return storage.NewInternalError(err)
		}
		if withRev == 0 {
			if err := s.validateMinimumResourceVersion(opts.ResourceVersion, res.Revision); err != nil {
				return err
			}
			withRev = res.Revision
		}
		afterChunk := int64(0)
		if stopped {
			afterChunk = res.Remaining + 1
		}
		if !paging && len(items) >= parallelDecodeMin {
			// Unpaged lists decode on all CPUs; results keep key order.
			if err := s.appendListItemsParallel(ctx, transformer, items, newItem, pred, v); err != nil {
				return err
			}
			lastKey = items[len(items)-1].Key
			items = nil
		}
		for i, item := range items {
			if paging && int64(v.Len()) >= limit {
				hasMore = true
				afterLast = int64(len(items)-i) + afterChunk
				break
			}
			lastKey = item.Key
			if err := s.appendListItem(ctx, transformer, item, newItem, pred, v); err != nil {
				return err
			}
		}
		if hasMore || !stopped {
			break
		}
		if paging && int64(v.Len()) >= limit {
			hasMore = true
			afterLast = afterChunk
			break
		}
		// The predicate dropped items: read on, doubling the chunk (as etcd3).
		start = lastKey + "\x00"
		chunkSize *= 2
		if chunkSize > maxChunk {
			chunkSize = maxChunk
		}
	}
	// PrepareContinueToken reports count-limit remaining items.
	continueValue, remainingItemCount, err := storage.PrepareContinueToken(lastKey, keyPrefix, withRev, limit+afterLast, hasMore, opts)
	if err != nil {
		return err
	}
	if v.IsNil() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	if err := s.versioner.UpdateList(listObj, uint64(withRev), continueValue, remainingItemCount); err != nil {
		return err
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.ShardedListAndWatch) {
		pred.SetShardInfoOnList(listObj)
	}
	return nil
}

const maxChunk = 10000

// appendListItem transforms and decodes one stored value and appends it to v
// when it matches pred. An unreadable value aborts the list.
func (s *Store) appendListItem(ctx context.Context, transformer value.Transformer, item kv.KeyValue,
	newItem func() runtime.Object, pred storage.SelectionPredicate, v reflect.Value) error {
	obj, err := s.decodeListItem(ctx, transformer, item, newItem, pred)
	if err != nil {
		return err
	}
	if obj != nil {
		v.Set(reflect.Append(v, reflect.ValueOf(obj).Elem()))
	}
	return nil
}

// decodeListItem transforms and decodes one stored value; it returns nil
// when the object does not match pred.
func (s *Store) decodeListItem(ctx context.Context, transformer value.Transformer, item kv.KeyValue,
	newItem func() runtime.Object, pred storage.SelectionPredicate) (runtime.Object, error) {
	data, _, err := transformer.TransformFromStorage(ctx, item.Value, keyContext(item.Key))
	if err != nil {
		return nil, storage.NewInternalError(fmt.Errorf("unable to transform key %q: %w", item.Key, err))
	}
	select {
	case <-ctx.Done():
		return nil, storage.NewTimeoutError(item.Key, "request did not complete within requested timeout")
	default:
	}
	obj, _, err := s.codec.Decode(data, nil, newItem())
	if err != nil {
		return nil, err
	}
	if err := s.versioner.UpdateObject(obj, uint64(item.ModRevision)); err != nil {
		utilruntime.HandleError(fmt.Errorf("bboltstore: setting resourceVersion: %w", err))
	}
	if ok, err := pred.Matches(obj); err == nil && ok {
		return obj, nil
	}
	return nil, nil
}

// parallelDecodeMin is the list size from which decoding is spread over
// GOMAXPROCS goroutines.
const parallelDecodeMin = 512

// appendListItemsParallel is appendListItem over items on GOMAXPROCS
// goroutines. The matching objects are appended in key order; on an error,
// the objects before the first failing item are appended and that error is
// returned, as the serial path does.
func (s *Store) appendListItemsParallel(ctx context.Context, transformer value.Transformer, items []kv.KeyValue,
	newItem func() runtime.Object, pred storage.SelectionPredicate, v reflect.Value) error {
	objs := make([]runtime.Object, len(items))
	errs := make([]error, len(items))
	workers := goruntime.GOMAXPROCS(0)
	if workers > len(items) {
		workers = len(items)
	}
	per := (len(items) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*per, min((w+1)*per, len(items))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				obj, err := s.decodeListItem(ctx, transformer, items[i], newItem, pred)
				if err != nil {
					errs[i] = err
					return
				}
				objs[i] = obj
			}
		}()
	}
	wg.Wait()
	growTo := v.Len() + len(items)
	if v.Cap() < growTo {
		grown := reflect.MakeSlice(v.Type(), v.Len(), growTo)
		reflect.Copy(grown, v)
		v.Set(grown)
	}
	for i := range items {
		if errs[i] != nil {
			return errs[i]
		}
		if objs[i] != nil {
			v.Set(reflect.Append(v, reflect.ValueOf(objs[i]).Elem()))
		}
	}
	return nil
}

// Stats implements storage.Interface: the number of objects of the resource
// and, once EnableResourceSizeEstimation was called, their average stored
// size in bytes (exact, not estimated).
func (s *Store) Stats(ctx context.Context) (storage.Stats, error) {
	prefix, err := s.prepareKey(s.resourcePrefix, true)
	if err != nil {
		return storage.Stats{}, err
	}
	withSize := s.sizeEstimation.Load()
	var n, size int64
	_, err = s.db.Range(kv.RangeOptions{Prefix: prefix, KeysOnly: !withSize}, func(item kv.KeyValue) (bool, error) {
		n++
		size += int64(len(item.Value))
		return true, nil
	})
	if err != nil {
		return storage.Stats{}, storage.NewInternalError(err)
	}
	st := storage.Stats{ObjectCount: n}
	if withSize && n > 0 {
		st.EstimatedAverageObjectSizeBytes = size / n
	}
	return st, nil
}

// EnableResourceSizeEstimation implements storage.Interface. Sizes are read
// from the file, so the keys function is only checked for nil.
func (s *Store) EnableResourceSizeEstimation(getKeys storage.KeysFunc) error {
	if getKeys == nil {
		return errors.New("KeysFunc cannot be nil")
	}
	if !s.sizeEstimation.CompareAndSwap(false, true) {
		return errors.New("resource size estimation already enabled")
	}
	return nil
}

// Keys lists the keys of the resource (a storage.KeysFunc).
func (s *Store) Keys(ctx context.Context) ([]string, error) {
	prefix, err := s.prepareKey(s.resourcePrefix, true)
	if err != nil {
		return nil, err
	}
	var keys []string
	_, err = s.db.Range(kv.RangeOptions{Prefix: prefix, KeysOnly: true}, func(item kv.KeyValue) (bool, error) {
		keys = append(keys, item.Key)
		return true, nil
	})
	return keys, err
}

// ReadinessCheck implements storage.Interface (see kv.DB.Healthy).
func (s *Store) ReadinessCheck() error { return s.db.Healthy() }

// RequestWatchProgress implements storage.Interface: watches opened with
// ProgressNotify get a bookmark at the current revision.
func (s *Store) RequestWatchProgress(ctx context.Context) error {
	s.db.RequestProgress()
	return nil
}

// GetCurrentResourceVersion implements storage.Interface: the global revision.
func (s *Store) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return uint64(s.db.Revision()), nil
}

// CompactRevision implements storage.Interface.
func (s *Store) CompactRevision() int64 { return s.db.CompactRevision() }
