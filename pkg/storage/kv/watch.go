package kv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrWatcherTooSlow ends a watch whose consumer fell more than
// Options.WatchQueueLength events behind: the writers never wait for
// watchers, so such a watcher is closed instead of buffering without bound.
var ErrWatcherTooSlow = errors.New("kv: watcher fell too far behind and was closed; events since its last delivered revision were dropped")

// WatchOptions select what a Watcher delivers.
type WatchOptions struct {
	// Key is the watched key, or the watched prefix with Prefix.
	Key    string
	Prefix bool
	// After: events with a revision greater than After are delivered,
	// starting from the revision log (etcd's WithRev(After+1)).
	After int64
	// Progress asks for progress notifications every
	// Options.ProgressInterval and on RequestProgress.
	Progress bool
}

// WatchItem is one delivery: an event, or (Event == nil) a progress
// notification saying every event up to ProgressRevision was delivered.
type WatchItem struct {
	Event            *Event
	ProgressRevision int64
}

// Watcher delivers the events of one watch. Next is not safe for concurrent
// use; Close may be called from any goroutine.
type Watcher struct {
	db   *DB
	opts WatchOptions

	queue    chan WatchItem
	overflow chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
	ovOnce   sync.Once

	regHead int64 // revision published when the watcher was registered
	cursor  int64 // highest revision delivered (or skipped as not selected)
	backlog []WatchItem
}

type hub struct {
	db       *DB
	queueLen int

	mu       sync.Mutex
	watchers map[*Watcher]struct{}
}

func newHub(db *DB, queueLen int) *hub {
	return &hub{db: db, queueLen: queueLen, watchers: map[*Watcher]struct{}{}}
}

func (w *Watcher) selects(key string) bool {
	if w.opts.Prefix {
		return strings.HasPrefix(key, w.opts.Key)
	}
	return key == w.opts.Key
}

// publish makes a committed batch visible: it advances the DB revision and
// hands the events to the watchers, without ever blocking on them.
func (h *hub) publish(events []*Event, rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.db.rev.Store(rev)
	for _, ev := range events {
		for w := range h.watchers {
			if !w.selects(ev.Key) {
				continue
			}
			select {
			case w.queue <- WatchItem{Event: ev}:
			default:
				w.markOverflow()
			}
		}
	}
}

// progress queues a progress notification at the current revision to the
// watchers that asked for them.
func (h *hub) progress() {
	h.mu.Lock()
	defer h.mu.Unlock()
	rev := h.db.rev.Load()
	for w := range h.watchers {
		if !w.opts.Progress {
			continue
		}
		select {
		case w.queue <- WatchItem{ProgressRevision: rev}:
		default: // a full queue already has work; skipping a notification is harmless
		}
	}
}

func (h *hub) remove(w *Watcher) {
	h.mu.Lock()
	delete(h.watchers, w)
	h.mu.Unlock()
}

func (h *hub) closeAll() {
	h.mu.Lock()
	ws := make([]*Watcher, 0, len(h.watchers))
	for w := range h.watchers {
		ws = append(ws, w)
	}
	h.mu.Unlock()
	for _, w := range ws {
		w.Close()
	}
}

// Watch starts a watch. Events after opts.After come first from the revision
// log, then live; opts.After older than the compacted revision makes Next
// fail with ErrCompacted (the etcd3 backend answers such a watch with an
// error too).
func (db *DB) Watch(opts WatchOptions) (*Watcher, error) {
	select {
	case <-db.closed:
		return nil, ErrClosed
	default:
	}
	w := &Watcher{
		db:       db,
		opts:     opts,
		queue:    make(chan WatchItem, db.hub.queueLen),
		overflow: make(chan struct{}),
		stopped:  make(chan struct{}),
		cursor:   opts.After,
	}
	db.hub.mu.Lock()
	w.regHead = db.rev.Load()
	db.hub.watchers[w] = struct{}{}
	db.hub.mu.Unlock()
	return w, nil
}

// RequestProgress queues a progress notification to every watcher that asked
// for progress notifications.
func (db *DB) RequestProgress() { db.hub.progress() }

func (w *Watcher) markOverflow() {
	w.ovOnce.Do(func() { close(w.overflow) })
}

// Close stops the watch; Next then returns ErrClosed.
func (w *Watcher) Close() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.db.hub.remove(w)
	})
}

// Next blocks for the next item.
//
// Errors: ErrCompacted when the watch start (or its catch-up position) was
// compacted away; ErrWatcherTooSlow after a queue overflow; ErrClosed after
// Close or DB.Close; ctx.Err() when ctx ends.
func (w *Watcher) Next(ctx context.Context) (WatchItem, error) {
	for {
		select {
		case <-w.stopped:
			return WatchItem{}, ErrClosed
		case <-w.overflow:
			return WatchItem{}, ErrWatcherTooSlow
		default:
		}
		if len(w.backlog) > 0 {
			it := w.backlog[0]
			w.backlog = w.backlog[1:]
			return it, nil
		}
		if w.cursor < w.regHead {
			if err := w.readLog(); err != nil {
				return WatchItem{}, err
			}
			continue
		}
		select {
		case <-w.stopped:
			return WatchItem{}, ErrClosed
		case <-w.overflow:
			return WatchItem{}, ErrWatcherTooSlow
		case <-ctx.Done():
			return WatchItem{}, ctx.Err()
		case it := <-w.queue:
			if it.Event == nil {
				if it.ProgressRevision < w.cursor {
					it.ProgressRevision = w.cursor
				}
				return it, nil
			}
			if it.Event.Revision <= w.cursor {
				continue // already delivered from the log
			}
			w.cursor = it.Event.Revision
			return it, nil
		}
	}
}

const logBatch = 256

// readLog loads the next batch of selected log entries in (cursor, regHead].
func (w *Watcher) readLog() error {
	return w.db.bolt.View(func(tx *bolt.Tx) error {
		c, _ := readU64(tx.Bucket(bucketMeta).Get(metaCompactKey))
		// Like an etcd3 watch, a start at or before the compacted revision
		// is refused: the events' previous values may be gone.
		if w.cursor < int64(c) {
			return ErrCompacted
		}
		cur := tx.Bucket(bucketLog).Cursor()
		n := 0
		for k, v := cur.Seek(u64(uint64(w.cursor + 1))); ; k, v = cur.Next() {
			if k == nil {
				w.cursor = w.regHead
				return nil
			}
			r, _ := readU64(k)
			rev := int64(r)
			if rev > w.regHead {
				w.cursor = w.regHead
				return nil
			}
			if n >= logBatch {
				return nil
			}
			w.cursor = rev
			key, ok := logKey(v)
			if !ok {
				_, err := decodeEvent(rev, v)
				return err
			}
			if !w.selects(key) {
				continue
			}
			ev, err := decodeEvent(rev, v)
			if err != nil {
				return err
			}
			w.backlog = append(w.backlog, WatchItem{Event: ev})
			n++
		}
	})
}

func (db *DB) progressLoop() {
	defer db.wg.Done()
	t := time.NewTicker(db.opts.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-db.closed:
			return
		case <-t.C:
			db.hub.progress()
		}
	}
}

// Compact drops the log entries older than rev; reads and watches at a
// revision before rev then fail with ErrCompacted. Compacting to a revision
// at or below the current compacted revision is a no-op.
//
// Errors: ErrFutureRevision when rev is newer than the current revision.
func (db *DB) Compact(rev int64) error {
	if rev > db.rev.Load() {
		return fmt.Errorf("compact to %d: %w", rev, ErrFutureRevision)
	}
	if rev <= db.compact.Load() {
		return nil
	}
	// Record the new compacted revision first so readers refuse it at once,
	// then delete the entries in bounded transactions.
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaCompactKey, u64(uint64(rev)))
	}); err != nil {
		return fmt.Errorf("compact to %d: %w", rev, err)
	}
	db.compact.Store(rev)
	for {
		var keys [][]byte
		err := db.bolt.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketLog)
			c := b.Cursor()
			for k, _ := c.First(); k != nil && len(keys) < 10000; k, _ = c.Next() {
				if r, _ := readU64(k); int64(r) >= rev {
					break
				}
				keys = append(keys, append([]byte{}, k...))
			}
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("compact to %d: %w", rev, err)
		}
		if len(keys) < 10000 {
			return nil
		}
	}
}

func (db *DB) compactLoop() {
	defer db.wg.Done()
	t := time.NewTicker(db.opts.CompactionInterval)
	defer t.Stop()
	var target int64
	for {
		select {
		case <-db.closed:
			return
		case <-t.C:
			if target > 0 {
				_ = db.Compact(target)
			}
			target = db.rev.Load()
		}
	}
}
