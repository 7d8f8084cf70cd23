//go:build go1.25

package readmap

import (
	"maps"
	"testing"

	"pgregory.net/rapid"
)

// Any sequence of locked writes (stores, deletes, a Range that deletes
// what it meets), LoadOrCreate and Reset agrees with two plain maps: the
// one readers see, which changes only as the lock is released, and the
// one the lock's holder sees, its writes included. A reader never sees a
// write before Unlock, nor misses one after it, and a Snapshot taken
// before a write is not changed by it.
func TestAgreesWithAModelOfPublishedAndLockedWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var m Map[int, int]
		published := map[int]int{}
		key := rapid.IntRange(0, 7)
		check := func(what string, model map[int]int, load func(int) (int, bool)) {
			for k := range 8 {
				v, ok := load(k)
				w, wok := model[k]
				if ok != wok || v != w {
					t.Fatalf("%s: %d = %d %v, want %d %v", what, k, v, ok, w, wok)
				}
			}
		}
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0: // one locked batch of writes
				before := m.Snapshot()
				kept := maps.Clone(before)
				m.Lock()
				locked := maps.Clone(published)
				for range rapid.IntRange(0, 6).Draw(t, "writes") {
					switch k := key.Draw(t, "key"); rapid.IntRange(0, 2).Draw(t, "write") {
					case 0:
						v := rapid.Int().Draw(t, "value")
						m.StoreLocked(k, v)
						locked[k] = v
					case 1:
						m.DeleteLocked(k)
						delete(locked, k)
					case 2:
						odd := rapid.Bool().Draw(t, "odd")
						met := map[int]int{}
						m.RangeLocked(func(k, v int) {
							met[k] = v
							if k%2 == 1 == odd {
								m.DeleteLocked(k)
							}
						})
						if !maps.Equal(met, locked) {
							t.Fatalf("RangeLocked met %v, want %v", met, locked)
						}
						maps.DeleteFunc(locked, func(k, _ int) bool { return k%2 == 1 == odd })
					}
					check("under the lock, LoadLocked", locked, m.LoadLocked)
					check("under the lock, Load", published, m.Load)
					if n := m.LenLocked(); n != len(locked) {
						t.Fatalf("LenLocked = %d, want %d", n, len(locked))
					}
				}
				m.Unlock()
				published = locked
				if !maps.Equal(m.Snapshot(), published) {
					t.Fatalf("Snapshot = %v, want %v", m.Snapshot(), published)
				}
				if !maps.Equal(before, kept) {
					t.Fatalf("a Snapshot taken before the writes changed: %v, was %v", before, kept)
				}
			case 1:
				k, v := key.Draw(t, "key"), rapid.Int().Draw(t, "value")
				made := 0
				got := m.LoadOrCreate(k, func() int { made++; return v })
				w, ok := published[k]
				if !ok {
					w = v
					published[k] = v
				}
				if got != w || made != map[bool]int{true: 0, false: 1}[ok] {
					t.Fatalf("LoadOrCreate(%d) = %d, made %d times; want %d", k, got, made, w)
				}
			case 2:
				m.Reset()
				clear(published)
			case 3:
				snap := m.Snapshot()
				snap[99] = 1
				if _, ok := m.Load(99); ok {
					t.Fatal("a write to a Snapshot reached the map")
				}
			}
			check("Load", published, m.Load)
		}
	})
}
