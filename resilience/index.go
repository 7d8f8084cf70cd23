package resilience

import (
	"hash/maphash"
	"sync/atomic"
)

// scopeIndex maps leaf scopes to their entries for the call path: a lookup
// is a hash of the scope and a few atomic loads, without a lock, and a
// scope stored by one call is found without a lock by the next. It is an
// open-addressing table with linear probing; writers (the scope table,
// under its lock) insert and delete in place, and replace the whole table
// when it grows or shrinks, publishing it atomically. A slot costs 16
// bytes, and the table is kept between a quarter and three quarters full.
//
// A lookup reads the table writers write to, never a copy of it: a store
// or delete made in place is seen by every lookup that begins after it,
// and a table replaced whole is left intact, so that a lookup still
// reading it finds what it held. The reclaimer sweeps the slots a bounded
// step at a time, resuming at a slot number, which a general concurrent
// map (sync.Map, xsync's Map) does not offer; with xsync's Map a pass
// would be one step over every scope, and each scope would hold a second
// copy of its key.
//
// The zero value is an empty index.
type scopeIndex struct {
	tab atomic.Pointer[indexTable]
}

type indexTable struct {
	slots []indexSlot // a power of two
	live  int         // entries; writer-only
	used  int         // entries and tombstones; writer-only
}

// indexSlot is empty (hash 0), a tombstone (hash 1), or holds an entry
// whose hash it caches. A reader that sees a hash loads the entry after
// it; a writer stores the entry first.
type indexSlot struct {
	hash atomic.Uint64
	e    atomic.Pointer[scopeEntry]
}

const (
	emptySlot  = 0
	tombstone  = 1
	minIndex   = 16
	growAt     = 3 // used > len * growAt / 4: rehash
	shrinkUnit = 8 // live < len / shrinkUnit: rehash smaller
)

// scopeSeed is the hash seed of every scope index of the process.
var scopeSeed = maphash.MakeSeed()

// hashScope returns sc's hash, never 0 or 1.
func hashScope(sc Scope) uint64 {
	h := maphash.Comparable(scopeSeed, sc)
	if h < 2 {
		h += 2
	}
	return h
}

// load returns the entry of sc, whose hash is h.
func (x *scopeIndex) load(sc Scope, h uint64) *scopeEntry {
	t := x.tab.Load()
	if t == nil {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch hv := t.slots[i].hash.Load(); hv {
		case emptySlot:
			return nil
		case h:
			if e := t.slots[i].e.Load(); e != nil && e.key == sc {
				return e
			}
		}
	}
}

// store adds e, which must not be in the index. The caller holds the
// scope table's lock.
func (x *scopeIndex) store(e *scopeEntry) {
	t := x.tab.Load()
	if t == nil || (t.used+1)*4 > len(t.slots)*growAt {
		t = x.rehash(t, 1)
	}
	mask := uint64(len(t.slots) - 1)
	for i := e.hash & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.hash.Load() {
		case emptySlot:
			t.used++
			fallthrough
		case tombstone:
			s.e.Store(e)
			s.hash.Store(e.hash)
			t.live++
			return
		}
	}
}

// delete removes e. The caller holds the scope table's lock.
func (x *scopeIndex) delete(e *scopeEntry) {
	t := x.tab.Load()
	if t == nil {
		return
	}
	mask := uint64(len(t.slots) - 1)
	for i := e.hash & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.hash.Load() {
		case emptySlot:
			return
		case e.hash:
			if s.e.Load() == e {
				s.hash.Store(tombstone)
				s.e.Store(nil)
				t.live--
				return
			}
		}
	}
}

// deleteAt removes the entry in slot i of t, the index's table. The caller
// holds the scope table's lock.
func (x *scopeIndex) deleteAt(t *indexTable, i int) {
	s := &t.slots[i]
	s.hash.Store(tombstone)
	s.e.Store(nil)
	t.live--
}

// sparse reports whether the index would be smaller rebuilt from its live
// entries. The caller holds the scope table's lock.
func (x *scopeIndex) sparse() bool {
	t := x.tab.Load()
	return t != nil && len(t.slots) > minIndex && t.live*shrinkUnit < len(t.slots)
}

// rebuild replaces the table with one holding es, which must be every
// live entry. It costs the entries, not the slots of the old table. The
// caller holds the scope table's lock.
func (x *scopeIndex) rebuild(es []*scopeEntry) {
	n := minIndex
	for n < len(es)*2 {
		n *= 2
	}
	nt := &indexTable{slots: make([]indexSlot, n)}
	mask := uint64(n - 1)
	for _, e := range es {
		j := e.hash & mask
		for nt.slots[j].hash.Load() != emptySlot {
			j = (j + 1) & mask
		}
		nt.slots[j].e.Store(e)
		nt.slots[j].hash.Store(e.hash)
	}
	nt.live, nt.used = len(es), len(es)
	x.tab.Store(nt)
}

// grows reports whether storing one more entry replaces the table. The
// caller holds the scope table's lock.
func (x *scopeIndex) grows() bool {
	t := x.tab.Load()
	return t == nil || (t.used+1)*4 > len(t.slots)*growAt
}

// rehash publishes a table sized for t's live entries and extra more, and
// returns it. Readers of the old table still find every entry it held.
func (x *scopeIndex) rehash(t *indexTable, extra int) *indexTable {
	live := extra
	if t != nil {
		live += t.live
	}
	n := minIndex
	for n < live*2 {
		n *= 2
	}
	nt := &indexTable{slots: make([]indexSlot, n)}
	mask := uint64(n - 1)
	if t != nil {
		for i := range t.slots {
			e := t.slots[i].e.Load()
			if e == nil {
				continue
			}
			j := e.hash & mask
			for nt.slots[j].hash.Load() != emptySlot {
				j = (j + 1) & mask
			}
			nt.slots[j].e.Store(e)
			nt.slots[j].hash.Store(e.hash)
			nt.live++
			nt.used++
		}
	}
	x.tab.Store(nt)
	return nt
}

// len returns the number of entries. The caller holds the scope table's
// lock.
func (x *scopeIndex) len() int {
	if t := x.tab.Load(); t != nil {
		return t.live
	}
	return 0
}

// rangeLocked calls f for every entry. The caller holds the scope table's
// lock; f may delete the entry it is given.
func (x *scopeIndex) rangeLocked(f func(*scopeEntry)) {
	t := x.tab.Load()
	if t == nil {
		return
	}
	for i := range t.slots {
		if e := t.slots[i].e.Load(); e != nil {
			f(e)
		}
	}
}
