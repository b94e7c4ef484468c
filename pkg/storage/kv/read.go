package kv

import (
	"bytes"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Get reads the current value of key. kv is nil when the key does not exist;
// rev is the store revision the read was served at.
func (db *DB) Get(key string) (kv *KeyValue, rev int64, err error) {
	err = db.bolt.View(func(tx *bolt.Tx) error {
		r, _ := readU64(tx.Bucket(bucketMeta).Get(metaRevKey))
		rev = int64(r)
		if raw := tx.Bucket(bucketCurrent).Get([]byte(key)); raw != nil {
			kv = decodeCurrent(key, raw, true)
		}
		return nil
	})
	return kv, rev, err
}

// RangeOptions select the keys a Range visits.
type RangeOptions struct {
	// Prefix selects every key starting with it; with Exact only the key
	// equal to it.
	Prefix string
	Exact  bool
	// Start skips keys before it (a continue key); empty means from Prefix.
	Start string
	// Revision reads the state as of that revision; 0 means current.
	Revision int64
	// KeysOnly leaves KeyValue.Value nil (counting, key listing).
	KeysOnly bool
}

// RangeResult describes a finished Range.
type RangeResult struct {
	// Revision the read was served at.
	Revision int64
	// Remaining is the number of selected keys after the last visited one
	// when visit stopped the range early (0 otherwise).
	Remaining int64
}

// Range visits, in key order, the keys selected by opts as of opts.Revision,
// inside one read transaction; visit returns false to stop. The KeyValue
// passed to visit is owned by the caller.
//
// Errors: ErrCompacted when opts.Revision is older than the compacted
// revision; ErrFutureRevision when it is newer than the current revision; an
// error visit returns.
func (db *DB) Range(opts RangeOptions, visit func(KeyValue) (bool, error)) (RangeResult, error) {
	var res RangeResult
	err := db.bolt.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		r, _ := readU64(meta.Get(metaRevKey))
		c, _ := readU64(meta.Get(metaCompactKey))
		head, compact := int64(r), int64(c)
		res.Revision = head
		if opts.Revision > 0 {
			if opts.Revision > head {
				return ErrFutureRevision
			}
			if opts.Revision < compact {
				return ErrCompacted
			}
			res.Revision = opts.Revision
		}
		var overrides []override
		if opts.Revision > 0 && opts.Revision < head {
			var err error
			overrides, err = collectOverrides(tx.Bucket(bucketLog), opts, head)
			if err != nil {
				return err
			}
		}
		it := newMerged(tx.Bucket(bucketCurrent).Cursor(), overrides, opts)
		for {
			kv, ok := it.next()
			if !ok {
				return nil
			}
			cont, err := visit(kv)
			if err != nil {
				return err
			}
			if !cont {
				for {
					if _, ok := it.nextKeyOnly(); !ok {
						return nil
					}
					res.Remaining++
				}
			}
		}
	})
	return res, err
}

// override is the state of a key at a past revision, for keys changed since.
type override struct {
	key    string
	exists bool
	value  []byte
	modRev int64
}

func selected(opts RangeOptions, key string) bool {
	if opts.Exact {
		return key == opts.Prefix
	}
	return strings.HasPrefix(key, opts.Prefix) && key >= opts.Start
}

// collectOverrides walks the log after opts.Revision: the first entry for a
// key after that revision holds (as its previous value) the key's state at it.
func collectOverrides(log *bolt.Bucket, opts RangeOptions, head int64) ([]override, error) {
	seen := map[string]int{}
	var out []override
	c := log.Cursor()
	for k, v := c.Seek(u64(uint64(opts.Revision + 1))); k != nil; k, v = c.Next() {
		key, ok := logKey(v)
		if !ok {
			rev, _ := readU64(k)
			_, err := decodeEvent(int64(rev), v)
			return nil, err
		}
		if !selected(opts, key) {
			continue
		}
		if _, dup := seen[key]; dup {
			continue
		}
		rev, _ := readU64(k)
		ev, err := decodeEvent(int64(rev), v)
		if err != nil {
			return nil, err
		}
		seen[key] = len(out)
		o := override{key: key, exists: !ev.Created}
		if o.exists {
			o.value = ev.PrevValue
			if o.value == nil {
				o.value = []byte{}
			}
			o.modRev = ev.PrevModRevision
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, nil
}

// merged iterates the current bucket and the overrides in key order; an
// override replaces (or hides) the current value of its key.
type merged struct {
	cur       *bolt.Cursor
	opts      RangeOptions
	ck, cv    []byte
	ov        []override
	started   bool
	exhausted bool
}

func newMerged(c *bolt.Cursor, ov []override, opts RangeOptions) *merged {
	start := opts.Prefix
	if !opts.Exact && opts.Start > start {
		start = opts.Start
	}
	m := &merged{cur: c, opts: opts, ov: ov}
	m.ck, m.cv = c.Seek([]byte(start))
	m.checkCur()
	for len(m.ov) > 0 && !selected(opts, m.ov[0].key) {
		m.ov = m.ov[1:]
	}
	return m
}

func (m *merged) checkCur() {
	if m.ck == nil {
		return
	}
	if m.opts.Exact {
		if string(m.ck) != m.opts.Prefix {
			m.ck = nil
		}
		return
	}
	if !bytes.HasPrefix(m.ck, []byte(m.opts.Prefix)) {
		m.ck = nil
	}
}

func (m *merged) advanceCur() {
	if m.opts.Exact {
		m.ck = nil
		return
	}
	m.ck, m.cv = m.cur.Next()
	m.checkCur()
}

// step returns the next entry; value is decoded only when withValue.
func (m *merged) step(withValue bool) (KeyValue, bool) {
	for {
		haveCur := m.ck != nil
		haveOv := len(m.ov) > 0
		if !haveCur && !haveOv {
			return KeyValue{}, false
		}
		if haveOv && (!haveCur || m.ov[0].key <= string(m.ck)) {
			o := m.ov[0]
			m.ov = m.ov[1:]
			if haveCur && o.key == string(m.ck) {
				m.advanceCur()
			}
			if !o.exists {
				continue
			}
			kv := KeyValue{Key: o.key, ModRevision: o.modRev}
			if withValue && !m.opts.KeysOnly {
				kv.Value = o.value
			}
			return kv, true
		}
		kv := *decodeCurrent(string(m.ck), m.cv, withValue && !m.opts.KeysOnly)
		if !withValue || m.opts.KeysOnly {
			kv.Value = nil
		}
		m.advanceCur()
		return kv, true
	}
}

func (m *merged) next() (KeyValue, bool)        { return m.step(true) }
func (m *merged) nextKeyOnly() (KeyValue, bool) { return m.step(false) }

// Count returns the number of keys under prefix at the current revision.
func (db *DB) Count(prefix string) (int64, error) {
	var n int64
	_, err := db.Range(RangeOptions{Prefix: prefix, KeysOnly: true}, func(KeyValue) (bool, error) {
		n++
		return true, nil
	})
	return n, err
}
