//go:build go1.25

package resilience

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// The scope index is written in place under the scope table's lock and
// replaced whole when it grows or shrinks; its tests check that a lookup
// made after a write returns sees the write, whichever table the write
// went to, so that no lookup answers from a table writers no longer
// update.

func indexKey(i int) Scope {
	return Scope{Provider: "aws", Account: fmt.Sprint(i), Region: "r", Service: "ec2", Operation: "DescribeVpcs"}
}

func indexEntry(sc Scope) *scopeEntry { return &scopeEntry{key: sc, hash: hashScope(sc)} }

// slotOf returns the slot of e in the index's table, as the reclaimer's
// sweep finds it, or -1.
func slotOf(x *scopeIndex, e *scopeEntry) int {
	t := x.tab.Load()
	if t == nil {
		return -1
	}
	for i := range t.slots {
		if t.slots[i].e.Load() == e {
			return i
		}
	}
	return -1
}

// A delete after the index was replaced (grown, then rebuilt smaller) is
// seen by the next lookup, and so is a store after it.
func TestIndexDeleteAfterTheTableIsReplaced(t *testing.T) {
	var x scopeIndex
	es := make([]*scopeEntry, 100)
	for i := range es {
		es[i] = indexEntry(indexKey(i))
		x.store(es[i]) // grows the table several times
	}
	for i, e := range es {
		if x.load(e.key, e.hash) != e {
			t.Fatalf("entry %d not found after the table grew", i)
		}
	}
	x.delete(es[7])
	if x.load(es[7].key, es[7].hash) != nil {
		t.Fatal("a deleted entry found after the table grew")
	}
	x.rebuild(es[:5]) // a sweep kept five
	for i, e := range es {
		if got := x.load(e.key, e.hash); (got == e) != (i < 5) || got != nil && got != e {
			t.Fatalf("entry %d: found %v after a rebuild keeping five", i, got != nil)
		}
	}
	x.deleteAt(x.tab.Load(), slotOf(&x, es[2]))
	if x.load(es[2].key, es[2].hash) != nil || x.len() != 4 {
		t.Fatal("an entry deleted in its slot after a rebuild is still found")
	}
	ne := indexEntry(es[2].key) // made again by its next call
	x.store(ne)
	if x.load(ne.key, ne.hash) != ne {
		t.Fatal("the entry made again is not the one found")
	}
}

// Random stores, deletes (by entry and by slot, as a sweep deletes),
// rebuilds and growth agree with a plain map after every step: every key
// present is found, every key absent is not (and the lookup ends: the
// tombstones never fill the table).
func TestIndexAgreesWithAMap(t *testing.T) {
	const keys = 96
	scopes := make([]Scope, keys)
	hashes := make([]uint64, keys)
	for i := range scopes {
		scopes[i] = indexKey(i)
		hashes[i] = hashScope(scopes[i])
	}
	for seed := range uint64(10) {
		r := rand.New(rand.NewPCG(seed, 2))
		var x scopeIndex
		model := map[Scope]*scopeEntry{}
		for step := range 1500 {
			sc := scopes[r.IntN(keys)]
			e, ok := model[sc]
			switch op := r.IntN(10); {
			case op < 5 && !ok:
				e = indexEntry(sc)
				x.store(e)
				model[sc] = e
			case op < 7 && ok:
				x.delete(e)
				delete(model, sc)
			case op < 9 && ok:
				x.deleteAt(x.tab.Load(), slotOf(&x, e))
				delete(model, sc)
			case op == 9 && (x.sparse() || r.IntN(20) == 0):
				live := make([]*scopeEntry, 0, len(model))
				for _, e := range model {
					live = append(live, e)
				}
				x.rebuild(live)
			}
			for i, sc := range scopes {
				if got, want := x.load(sc, hashes[i]), model[sc]; got != want {
					t.Fatalf("seed %d step %d: load(%d) = %p, want %p", seed, step, i, got, want)
				}
			}
			n := 0
			x.rangeLocked(func(e *scopeEntry) {
				if model[e.key] != e {
					t.Fatalf("seed %d step %d: range visits %v, not held", seed, step, e.key)
				}
				n++
			})
			if n != len(model) || x.len() != len(model) {
				t.Fatalf("seed %d step %d: range %d, len %d, want %d", seed, step, n, x.len(), len(model))
			}
		}
	}
}

// Lookups without the lock, while a writer stores, deletes, grows and
// rebuilds under it, never miss a key held throughout, never return an
// entry of another key or one deleted before the lookup began, and see
// the writer's last state once it is done.
func TestIndexLookupsDuringWrites(t *testing.T) {
	const stable, churned = 32, 256
	var (
		x    scopeIndex
		mu   sync.Mutex
		done atomic.Bool
		wg   sync.WaitGroup
	)
	for i := range stable {
		x.store(indexEntry(indexKey(i)))
	}
	deleted := make([]atomic.Pointer[scopeEntry], churned) // the last entry deleted of each churned key
	for range 2 {
		wg.Go(func() {
			for !done.Load() {
				for i := range stable + churned {
					sc := indexKey(i)
					var gone *scopeEntry
					if i >= stable {
						gone = deleted[i-stable].Load()
					}
					e := x.load(sc, hashScope(sc))
					switch {
					case i < stable && e == nil:
						t.Errorf("key %d, held throughout, not found", i)
						return
					case e != nil && e.key != sc:
						t.Errorf("key %d: found the entry of %v", i, e.key)
						return
					case e != nil && e == gone:
						t.Errorf("key %d: found an entry deleted before the lookup began", i)
						return
					}
				}
			}
		})
	}
	r := rand.New(rand.NewPCG(3, 4))
	held := map[int]*scopeEntry{}
	for range 20000 {
		i := stable + r.IntN(churned)
		mu.Lock()
		if e, ok := held[i]; ok {
			if r.IntN(2) == 0 {
				x.delete(e)
			} else {
				x.deleteAt(x.tab.Load(), slotOf(&x, e))
			}
			deleted[i-stable].Store(e)
			delete(held, i)
		} else {
			e := indexEntry(indexKey(i))
			x.store(e)
			held[i] = e
		}
		if x.sparse() {
			live := make([]*scopeEntry, 0, stable+len(held))
			x.rangeLocked(func(e *scopeEntry) { live = append(live, e) })
			x.rebuild(live)
		}
		mu.Unlock()
	}
	done.Store(true)
	wg.Wait()
	for i := range stable + churned {
		sc := indexKey(i)
		got := x.load(sc, hashScope(sc))
		if want := held[i]; i >= stable && got != want || i < stable && got == nil {
			t.Fatalf("key %d: found %p after the writer finished, want %p", i, got, want)
		}
	}
}
