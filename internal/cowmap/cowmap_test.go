//go:build go1.25

package cowmap

import (
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// A lookup made after a write returns sees the write: a value stored over
// one already read, and a key deleted after it was read, however often the
// key was read before (a map with a lock-free read copy that writes do not
// update fails here once reads have promoted the copy).
func TestReadsSeeEveryFinishedWrite(t *testing.T) {
	var m Map[string, int]
	m.Store("a", 1)
	for range 100 { // as many reads as a read copy would need to be promoted
		if v, ok := m.Load("a"); !ok || v != 1 {
			t.Fatalf("a = %v %v, want 1", v, ok)
		}
	}
	m.Store("a", 2)
	if v, ok := m.Load("a"); !ok || v != 2 {
		t.Fatalf("a = %v %v after storing 2 over 1", v, ok)
	}
	for range 100 {
		m.Load("a")
	}
	m.Delete("a")
	if v, ok := m.Load("a"); ok {
		t.Fatalf("a = %v after its delete", v)
	}
	if got := m.LoadOrStore("a", func() int { return 3 }); got != 3 {
		t.Fatalf("LoadOrStore after delete = %v, want a new 3", got)
	}
	m.Clear()
	if _, ok := m.Load("a"); ok || m.Len() != 0 {
		t.Fatal("a key after Clear")
	}
}

// Random writes and reads agree with a plain map after every step.
func TestAgreesWithAMap(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		var m Map[int, int]
		model := map[int]int{}
		for step := range 2000 {
			k := r.IntN(16)
			switch r.IntN(5) {
			case 0, 1:
				v := r.Int()
				m.Store(k, v)
				model[k] = v
			case 2:
				m.Delete(k)
				delete(model, k)
			case 3:
				v := r.Int()
				got := m.LoadOrStore(k, func() int { return v })
				if _, ok := model[k]; !ok {
					model[k] = v
				}
				if got != model[k] {
					t.Fatalf("seed %d step %d: LoadOrStore(%d) = %d, want %d", seed, step, k, got, model[k])
				}
			case 4:
				if r.IntN(50) == 0 {
					m.Clear()
					clear(model)
				}
			}
			for k := range 16 {
				v, ok := m.Load(k)
				w, wok := model[k]
				if ok != wok || v != w {
					t.Fatalf("seed %d step %d: Load(%d) = %d %v, want %d %v", seed, step, k, v, ok, w, wok)
				}
			}
			if m.Len() != len(model) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, m.Len(), len(model))
			}
		}
	}
}

// A snapshot is the caller's: changing it changes nothing in the map, and
// later writes do not show in it.
func TestSnapshotIsACopy(t *testing.T) {
	var m Map[string, int]
	if s := m.Snapshot(); s == nil || len(s) != 0 {
		t.Fatalf("empty map's snapshot %v", s)
	}
	m.Store("a", 1)
	s := m.Snapshot()
	s["b"] = 2
	m.Store("a", 9)
	if _, ok := m.Load("b"); ok || s["a"] != 1 {
		t.Fatalf("snapshot and map share memory: map b present, snapshot a=%d", s["a"])
	}
}

// Concurrent LoadOrStore calls of one key make one value, and every caller
// gets it.
func TestLoadOrStoreMakesOnce(t *testing.T) {
	var m Map[string, *int]
	var made atomic.Int64
	var wg sync.WaitGroup
	got := make([]*int, 16)
	for i := range got {
		wg.Go(func() {
			got[i] = m.LoadOrStore("k", func() *int { made.Add(1); return new(int) })
		})
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Fatalf("made %d values for one key", made.Load())
	}
	for _, p := range got {
		if p != got[0] {
			t.Fatal("callers got different values")
		}
	}
}

// Under concurrent reads, a reader never sees a key go back to an older
// value, and once the writer is done every reader sees its last write.
func TestConcurrentReadersSeeWritesInOrder(t *testing.T) {
	var m Map[int, int]
	const keys, writes = 4, 2000
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			last := make([]int, keys)
			for !done.Load() {
				for k := range keys {
					v, ok := m.Load(k)
					if !ok {
						continue // key 0 between its delete and its store
					}
					if v < last[k] {
						t.Errorf("key %d went back from %d to %d", k, last[k], v)
						return
					}
					last[k] = v
				}
			}
			for k := range keys {
				if v, _ := m.Load(k); v != writes {
					t.Errorf("key %d = %d after the writer finished, want %d", k, v, writes)
				}
			}
		})
	}
	for i := 1; i <= writes; i++ {
		m.Store(i%keys, i)
		if i%keys == 0 {
			m.Delete(0) // deleted, then stored again higher
			m.Store(0, i)
		}
	}
	for k := range keys {
		m.Store(k, writes)
	}
	done.Store(true)
	wg.Wait()
}

// A lookup does not allocate.
func TestLoadDoesNotAllocate(t *testing.T) {
	var m Map[string, string]
	m.Store("Secrets Manager", "secretsmanager")
	key := string([]byte("Secrets Manager"))
	if n := testing.AllocsPerRun(100, func() { m.Load(key) }); n != 0 {
		t.Fatalf("%v allocations per Load", n)
	}
}

// Concurrent writers lose none of each other's writes: each of several
// goroutines stores, deletes and LoadOrStores keys of its own, and reads
// its own writes back at once, while the others copy the map for theirs;
// at the end the map holds every goroutine's last write and nothing else
// (a writer that published a copy made before another's write returned
// would lose it).
func TestConcurrentWritersLoseNoWrite(t *testing.T) {
	var m Map[int, int]
	const writers, keys, steps = 4, 8, 3000
	models := make([]map[int]int, writers)
	var wg sync.WaitGroup
	for w := range writers {
		models[w] = map[int]int{}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			model := models[w]
			for step := range steps {
				k := w*keys + r.IntN(keys)
				switch v := r.Int(); r.IntN(3) {
				case 0:
					m.Store(k, v)
					model[k] = v
				case 1:
					m.Delete(k)
					delete(model, k)
				case 2:
					got := m.LoadOrStore(k, func() int { return v })
					if _, ok := model[k]; !ok {
						model[k] = v
					}
					if got != model[k] {
						t.Errorf("writer %d step %d: LoadOrStore(%d) = %d, want %d", w, step, k, got, model[k])
						return
					}
				}
				for j := w * keys; j < (w+1)*keys; j++ {
					v, ok := m.Load(j)
					if want, wok := model[j]; ok != wok || v != want {
						t.Errorf("writer %d step %d: Load(%d) = %d %v, want %d %v", w, step, j, v, ok, want, wok)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	want := map[int]int{}
	for _, model := range models {
		maps.Copy(want, model)
	}
	if got := m.Snapshot(); !maps.Equal(got, want) || m.Len() != len(want) {
		t.Fatalf("after the writers: %d keys %v, want %d keys %v", m.Len(), got, len(want), want)
	}
}
