package bboltstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/olm-apiserver/olm-apiserver/pkg/storage/kv"
)

const (
	resultBuffer     = 100
	initialPageLimit = 1000
	watchTooOld      = "The resourceVersion for the provided watch is too old."
)

// Watch implements storage.Interface.
//
// ResourceVersion "" or "0" without SendInitialEvents: current objects as
// ADDED, then changes. ResourceVersion N: changes after N (410 Expired event
// when N is compacted). SendInitialEvents=true (WatchList): objects at N or
// now as ADDED, then, if bookmarks are allowed, a bookmark annotated
// "k8s.io/initial-events-end", then changes. ProgressNotify: bookmarks at
// the current revision periodically and on RequestWatchProgress.
func (s *Store) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	k, err := s.prepareKey(key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	rev, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if opts.ProgressNotify && s.newFunc == nil {
		return nil, apierrors.NewInternalError(errors.New("progressNotify for watch is unsupported by the bbolt storage because no newFunc was provided"))
	}
	watchList := utilfeature.DefaultFeatureGate.Enabled(features.WatchList)
	start := int64(rev)
	if start == 0 && watchList && opts.SendInitialEvents != nil && !*opts.SendInitialEvents {
		start = s.db.Revision()
	}
	initial := (opts.SendInitialEvents == nil && rev == 0) ||
		(watchList && opts.SendInitialEvents != nil && *opts.SendInitialEvents)
	endBookmark := watchList && opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.Predicate.AllowWatchBookmarks

	pred := opts.Predicate
	if pred.Empty() {
		pred = storage.Everything
	}
	wc := &watchChan{
		store:            s,
		key:              k,
		recursive:        opts.Recursive,
		start:            start,
		pred:             pred,
		acceptAll:        pred.Empty(),
		progress:         opts.ProgressNotify || (s.bookmarks && opts.Predicate.AllowWatchBookmarks),
		recordTimestamps: opts.RecordTimestamps,
		result:           make(chan watch.Event, resultBuffer),
	}
	wc.ctx, wc.cancel = context.WithCancel(ctx)
	go wc.run(initial, endBookmark)
	// Reads are local and the watch is registered right away, so the
	// request counts as initialized immediately (as etcd3 does).
	utilflowcontrol.WatchInitialized(ctx)
	return wc, nil
}

type watchChan struct {
	store            *Store
	key              string
	recursive        bool
	start            int64
	pred             storage.SelectionPredicate
	acceptAll        bool
	progress         bool
	recordTimestamps bool

	ctx    context.Context
	cancel context.CancelFunc
	result chan watch.Event
}

func (wc *watchChan) Stop()                          { wc.cancel() }
func (wc *watchChan) ResultChan() <-chan watch.Event { return wc.result }

func (wc *watchChan) send(ev watch.Event) bool {
	select {
	case wc.result <- ev:
		return true
	case <-wc.ctx.Done():
		return false
	}
}

// sendError turns err into an Error event (etcd3's mapping) and ends the watch.
func (wc *watchChan) sendError(err error) {
	// A stopped watch, an ended request context or a closed DB just close
	// the result channel (an etcd watch channel closes the same way).
	if err == nil || wc.ctx.Err() != nil || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kv.ErrClosed) {
		return
	}
	switch {
	case errors.Is(err, kv.ErrCompacted):
		err = apierrors.NewResourceExpired(watchTooOld)
	case errors.Is(err, kv.ErrWatcherTooSlow):
		err = apierrors.NewResourceExpired(err.Error())
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	wc.send(watch.Event{Type: watch.Error, Object: &st})
}

func (wc *watchChan) run(initial, endBookmark bool) {
	defer close(wc.result)
	defer wc.cancel()
	s := wc.store
	after := wc.start
	if initial && after > 0 {
		if current := s.db.Revision(); after > current {
			wc.sendError(storage.NewTooLargeResourceVersionError(uint64(after), uint64(current), int(wait.Jitter(time.Second, 3).Seconds())))
			return
		}
	}
	if initial {
		// Initial events are the state "not older than" the requested
		// revision: the current one (checked above not to be older).
		rev, err := wc.sendInitial(0)
		if err != nil {
			wc.sendError(err)
			return
		}
		after = rev
	}
	if endBookmark {
		obj, err := wc.bookmark(after)
		if err == nil {
			err = storage.AnnotateInitialEventsEndBookmark(obj)
		}
		if err != nil {
			wc.sendError(err)
			return
		}
		if !wc.send(watch.Event{Type: watch.Bookmark, Object: obj}) {
			return
		}
	}
	w, err := s.db.Watch(kv.WatchOptions{Key: wc.key, Prefix: wc.recursive, After: after, Progress: wc.progress})
	if err != nil {
		wc.sendError(err)
		return
	}
	defer w.Close()
	for {
		item, err := w.Next(wc.ctx)
		if err != nil {
			wc.sendError(err)
			return
		}
		ev, err := wc.transform(item)
		if err != nil {
			wc.sendError(err)
			return
		}
		if ev == nil {
			continue
		}
		if !wc.send(*ev) {
			return
		}
	}
}

// sendInitial sends the objects as of revision at (0: now) as ADDED events,
// reading in pages outside of any long-lived transaction, and returns the
// revision they were read at.
func (wc *watchChan) sendInitial(at int64) (int64, error) {
	s := wc.store
	start := ""
	for {
		var page []kv.KeyValue
		more := false
		res, err := s.db.Range(kv.RangeOptions{Prefix: wc.key, Exact: !wc.recursive, Start: start, Revision: at},
			func(item kv.KeyValue) (bool, error) {
				if len(page) == initialPageLimit {
					more = true
					return false, nil
				}
				page = append(page, item)
				return true, nil
			})
		if err != nil {
			if errors.Is(err, kv.ErrFutureRevision) {
				return 0, storage.NewTooLargeResourceVersionError(uint64(at), uint64(s.db.Revision()), 0)
			}
			return 0, err
		}
		at = res.Revision
		for _, item := range page {
			obj, err := wc.decode(item.Key, item.Value, item.ModRevision)
			if err != nil {
				return 0, err
			}
			if !wc.filter(obj) {
				continue
			}
			if !wc.send(watch.Event{Type: watch.Added, Object: obj}) {
				return 0, context.Canceled
			}
		}
		if !more {
			return at, nil
		}
		start = page[len(page)-1].Key + "\x00"
	}
}

func (wc *watchChan) bookmark(rev int64) (runtime.Object, error) {
	obj := wc.store.newFunc()
	if err := wc.store.versioner.UpdateObject(obj, uint64(rev)); err != nil {
		return nil, fmt.Errorf("failed to propagate object resource version: %w", err)
	}
	return obj, nil
}

func (wc *watchChan) decode(key string, stored []byte, rev int64) (runtime.Object, error) {
	data, _, err := wc.store.Transformer().TransformFromStorage(wc.ctx, stored, keyContext(key))
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(wc.store.codec, data)
	if err != nil {
		return nil, err
	}
	if err := wc.store.versioner.UpdateObject(obj, uint64(rev)); err != nil {
		return nil, fmt.Errorf("failure to version api object (%d) %#v: %v", rev, obj, err)
	}
	return obj, nil
}

func (wc *watchChan) filter(obj runtime.Object) bool {
	if wc.acceptAll {
		return true
	}
	ok, err := wc.pred.Matches(obj)
	return err == nil && ok
}

// transform turns a core item into the watch event the client sees (nil:
// filtered out). The previous object of an update or delete carries the
// revision of the change, as with etcd3.
func (wc *watchChan) transform(item kv.WatchItem) (*watch.Event, error) {
	if item.Event == nil {
		obj, err := wc.bookmark(item.ProgressRevision)
		if err != nil {
			return nil, err
		}
		return &watch.Event{Type: watch.Bookmark, Object: obj}, nil
	}
	e := item.Event
	var cur, old runtime.Object
	var err error
	if !e.Deleted {
		if cur, err = wc.decode(e.Key, e.Value, e.Revision); err != nil {
			return nil, err
		}
	}
	if e.PrevValue != nil && (e.Deleted || !wc.acceptAll) {
		if old, err = wc.decode(e.Key, e.PrevValue, e.Revision); err != nil {
			if e.Deleted {
				// The object is gone; say so instead of failing opaquely
				// (etcd3 answers StoreReadError the same way).
				return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
					Status:  metav1.StatusFailure,
					Code:    http.StatusInternalServerError,
					Reason:  metav1.StatusReasonStoreReadError,
					Message: fmt.Sprintf("saw a DELETED event, but object data is corrupt - %v", err),
				}}
			}
			return nil, err
		}
	}
	var res *watch.Event
	switch {
	case e.Deleted:
		if old == nil || !wc.filter(old) {
			return nil, nil
		}
		res = &watch.Event{Type: watch.Deleted, Object: old}
	case e.Created || old == nil && !wc.acceptAll:
		if !wc.filter(cur) {
			return nil, nil
		}
		res = &watch.Event{Type: watch.Added, Object: cur}
	case wc.acceptAll:
		res = &watch.Event{Type: watch.Modified, Object: cur}
	default:
		curOK, oldOK := wc.filter(cur), wc.filter(old)
		switch {
		case curOK && oldOK:
			res = &watch.Event{Type: watch.Modified, Object: cur}
		case curOK:
			res = &watch.Event{Type: watch.Added, Object: cur}
		case oldOK:
			res = &watch.Event{Type: watch.Deleted, Object: old}
		default:
			return nil, nil
		}
	}
	if wc.recordTimestamps {
		res.Object = &timedEvent{Object: res.Object, recordTime: time.Now()}
	}
	return res, nil
}

// timedEvent carries the time the event was read from the log
// (storage.WatchEventWithRecordTime, for ListOptions.RecordTimestamps).
type timedEvent struct {
	runtime.Object
	recordTime time.Time
}

var _ storage.WatchEventWithRecordTime = &timedEvent{}

func (t *timedEvent) GetObjectMeta() metav1.Object {
	m, _ := meta.Accessor(t.Object)
	return m
}
func (t *timedEvent) DeepCopyObject() runtime.Object {
	return &timedEvent{Object: t.Object.DeepCopyObject(), recordTime: t.recordTime}
}
func (t *timedEvent) RecordTime() time.Time  { return t.recordTime }
func (t *timedEvent) Unwrap() runtime.Object { return t.Object }
