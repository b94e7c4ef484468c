// Package kv is the narrow storage core under the bbolt backend: a single
// bbolt file holding a current key→value bucket, an append-only revision log
// and one global revision counter, with etcd-like multi-version reads,
// compaction and an in-process watch fan-out.
//
// Layout of the file (all integers big-endian uint64):
//
//	meta     "magic" → "olm-apiserver/kv", "format" → 1,
//	         "rev" → current revision, "compact" → compacted revision
//	current  key → modRevision(8) | value
//	log      revision(8) → encoded Event (key, value, previous value,
//	         previous modRevision, created/deleted flags)
//
// Revisions start at 1 (an empty store is at revision 1, as an empty etcd is)
// and grow by exactly one per successful put or delete. Every write is
// committed with fsync before it is acknowledged.
package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	boltErrors "go.etcd.io/bbolt/errors"
)

var (
	bucketMeta    = []byte("meta")
	bucketCurrent = []byte("current")
	bucketLog     = []byte("log")

	metaMagicKey   = []byte("magic")
	metaFormatKey  = []byte("format")
	metaRevKey     = []byte("rev")
	metaCompactKey = []byte("compact")

	magic = []byte("olm-apiserver/kv")
)

const formatVersion = 1

// ErrCompacted is returned by reads and watches at a revision older than the
// compacted revision (etcd: "mvcc: required revision has been compacted").
var ErrCompacted = errors.New("kv: required revision has been compacted")

// ErrFutureRevision is returned by reads at a revision newer than the current
// one (etcd: "mvcc: required revision is a future revision").
var ErrFutureRevision = errors.New("kv: required revision is a future revision")

// ErrClosed is returned by operations on a closed DB.
var ErrClosed = errors.New("kv: database is closed")

// Options configure Open. The zero value is usable.
type Options struct {
	// LockTimeout bounds how long Open waits for the exclusive file lock
	// held by another process (or another DB in this process). Default 5s.
	LockTimeout time.Duration
	// CompactionInterval is the retention of the revision log: every
	// interval the log is compacted up to the revision that was current one
	// interval earlier (the same scheme as kube-apiserver's etcd compactor).
	// Zero means 5 minutes; negative disables background compaction.
	CompactionInterval time.Duration
	// WatchQueueLength is how many events a watcher may have queued before
	// it is closed as too slow. Default 10000.
	WatchQueueLength int
	// ProgressInterval is how often watchers that asked for progress
	// notifications (or bookmarks) get one. Default 1 minute.
	ProgressInterval time.Duration
	// MaxBatch caps how many concurrent writes share one bbolt commit.
	// Default 512.
	MaxBatch int
}

func (o *Options) setDefaults() {
	if o.LockTimeout <= 0 {
		o.LockTimeout = 5 * time.Second
	}
	if o.CompactionInterval == 0 {
		o.CompactionInterval = 5 * time.Minute
	}
	if o.WatchQueueLength <= 0 {
		o.WatchQueueLength = 10000
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Minute
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
}

// DB is an open storage file. It is safe for concurrent use.
type DB struct {
	path string
	opts Options
	bolt *bolt.DB

	writes chan *writeRequest
	hub    *hub

	rev     atomic.Int64 // last committed and published revision
	compact atomic.Int64 // compacted revision

	closeOnce  sync.Once
	closed     chan struct{}
	writerDone chan struct{} // closed when the writer goroutine has stopped
	wg         sync.WaitGroup
	failure    atomic.Pointer[error] // set when a commit failed: the DB stops accepting writes
}

// Open opens (creating when absent) the storage file at path.
//
// Errors: a file that is not a bbolt file, or a bbolt file that is not an
// olm-apiserver storage file, or one of a newer format, fails with an error
// naming the path and the cause; a file locked by another process fails after
// Options.LockTimeout with an error saying so.
func Open(path string, opts Options) (*DB, error) {
	opts.setDefaults()
	b, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        opts.LockTimeout,
		NoSync:         false,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		switch {
		case errors.Is(err, boltErrors.ErrTimeout):
			return nil, fmt.Errorf("storage file %s is locked by another process (waited %s): %w", path, opts.LockTimeout, err)
		case errors.Is(err, boltErrors.ErrInvalid), errors.Is(err, boltErrors.ErrChecksum), errors.Is(err, boltErrors.ErrVersionMismatch):
			return nil, fmt.Errorf("storage file %s is corrupt or not a bbolt database: %w", path, err)
		}
		return nil, fmt.Errorf("opening storage file %s: %w", path, err)
	}
	var rev, compact int64
	err = b.Update(func(tx *bolt.Tx) error {
		var err error
		rev, compact, err = initialize(tx)
		return err
	})
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("storage file %s: %w", path, err)
	}
	db := &DB{
		path:       path,
		opts:       opts,
		bolt:       b,
		writes:     make(chan *writeRequest, opts.MaxBatch),
		closed:     make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	db.rev.Store(rev)
	db.compact.Store(compact)
	db.hub = newHub(db, opts.WatchQueueLength)
	db.wg.Add(2)
	go db.writeLoop()
	go db.progressLoop()
	if opts.CompactionInterval > 0 {
		db.wg.Add(1)
		go db.compactLoop()
	}
	return db, nil
}

// initialize checks the meta bucket of an existing file, or lays out a new
// one, and returns the current and compacted revisions.
func initialize(tx *bolt.Tx) (rev, compact int64, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			empty = false
			return nil
		})
		if !empty {
			return 0, 0, errors.New("not an olm-apiserver storage file (bbolt database without the meta bucket)")
		}
		if meta, err = tx.CreateBucket(bucketMeta); err != nil {
			return 0, 0, err
		}
		for _, name := range [][]byte{bucketCurrent, bucketLog} {
			if _, err = tx.CreateBucket(name); err != nil {
				return 0, 0, err
			}
		}
		if err = meta.Put(metaMagicKey, magic); err != nil {
			return 0, 0, err
		}
		if err = meta.Put(metaFormatKey, u64(formatVersion)); err != nil {
			return 0, 0, err
		}
		if err = meta.Put(metaRevKey, u64(1)); err != nil {
			return 0, 0, err
		}
		if err = meta.Put(metaCompactKey, u64(0)); err != nil {
			return 0, 0, err
		}
		return 1, 0, nil
	}
	if !bytes.Equal(meta.Get(metaMagicKey), magic) {
		return 0, 0, errors.New("not an olm-apiserver storage file (wrong magic in the meta bucket)")
	}
	format, ok := readU64(meta.Get(metaFormatKey))
	if !ok || format != formatVersion {
		return 0, 0, fmt.Errorf("unsupported storage format %d (this build reads format %d)", format, formatVersion)
	}
	if tx.Bucket(bucketCurrent) == nil || tx.Bucket(bucketLog) == nil {
		return 0, 0, errors.New("corrupt storage file: missing current or log bucket")
	}
	r, ok1 := readU64(meta.Get(metaRevKey))
	c, ok2 := readU64(meta.Get(metaCompactKey))
	if !ok1 || !ok2 || r < 1 || c > r {
		return 0, 0, fmt.Errorf("corrupt storage file: bad revision %d / compacted revision %d", r, c)
	}
	// The newest log entry must not be ahead of the recorded revision.
	if k, _ := tx.Bucket(bucketLog).Cursor().Last(); k != nil {
		if last, _ := readU64(k); last > r {
			return 0, 0, fmt.Errorf("corrupt storage file: log entry %d is newer than revision %d", last, r)
		}
	}
	return int64(r), int64(c), nil
}

// Path is the file the DB was opened from.
func (db *DB) Path() string { return db.path }

// Revision is the current (last committed) revision.
func (db *DB) Revision() int64 { return db.rev.Load() }

// CompactRevision is the revision the log was last compacted to (0 if never).
func (db *DB) CompactRevision() int64 { return db.compact.Load() }

// Close stops the writer, closes all watches and releases the file lock.
// Writes already acknowledged are on disk; writes in flight fail with ErrClosed.
func (db *DB) Close() error {
	var err error
	db.closeOnce.Do(func() {
		close(db.closed)
		db.wg.Wait()
		db.hub.closeAll()
		err = db.bolt.Close()
	})
	return err
}

// Healthy reports whether the DB can serve: it is open, no commit has failed,
// and a read transaction on the file succeeds.
func (db *DB) Healthy() error {
	select {
	case <-db.closed:
		return ErrClosed
	default:
	}
	if p := db.failure.Load(); p != nil {
		return fmt.Errorf("storage file %s: a commit failed, writes are refused: %w", db.path, *p)
	}
	return db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) == nil {
			return fmt.Errorf("storage file %s: meta bucket missing", db.path)
		}
		return nil
	})
}

// Size is the size of the storage file in bytes.
func (db *DB) Size() int64 {
	var n int64
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func readU64(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}
