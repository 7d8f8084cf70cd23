//go:build go1.25

package readmap

import (
	"sync"
	"sync/atomic"
	"testing"
)

func TestLoadStoreDelete(t *testing.T) {
	var m Map[string, int]
	if _, ok := m.Load("a"); ok {
		t.Fatal("empty map has a")
	}
	m.Lock()
	m.StoreLocked("a", 1)
	m.StoreLocked("b", 2)
	m.Unlock()
	if v, ok := m.Load("a"); !ok || v != 1 {
		t.Fatalf("a = %v %v", v, ok)
	}
	m.Lock()
	m.DeleteLocked("a")
	n := m.LenLocked()
	m.Unlock()
	if _, ok := m.Load("a"); ok || n != 1 {
		t.Fatalf("a after delete; %d keys", n)
	}
	if s := m.Snapshot(); len(s) != 1 || s["b"] != 2 {
		t.Fatalf("snapshot %v", s)
	}
	m.Reset()
	if _, ok := m.Load("b"); ok {
		t.Fatal("b after reset")
	}
}

// Writes are published when the lock is released: readers see every key
// without the lock, and a published read copy is never written again.
func TestWritesArePublishedAtUnlock(t *testing.T) {
	var m Map[int, int]
	m.Lock()
	for i := range 4 {
		m.StoreLocked(i, i)
	}
	if m.read.Load() != nil {
		t.Fatal("read copy published while the lock is held")
	}
	m.Unlock()
	r := m.read.Load()
	if r == nil || len(*r) != 4 {
		t.Fatal("four stores were not published at Unlock")
	}
	m.Lock()
	m.StoreLocked(9, 9)
	m.Unlock()
	if len(*r) != 4 {
		t.Fatal("a write changed the published read copy")
	}
	if v, ok := m.Load(9); !ok || v != 9 {
		t.Fatal("new key not found")
	}
}

func TestLoadOrCreateMakesOnce(t *testing.T) {
	var m Map[string, *int]
	var made atomic.Int64
	var wg sync.WaitGroup
	got := make([]*int, 16)
	for i := range got {
		wg.Go(func() {
			got[i] = m.LoadOrCreate("k", func() *int { made.Add(1); return new(int) })
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

func TestRangeLockedMayDelete(t *testing.T) {
	var m Map[int, int]
	m.Lock()
	for i := range 10 {
		m.StoreLocked(i, i)
	}
	m.RangeLocked(func(k, v int) {
		if k%2 == 0 {
			m.DeleteLocked(k)
		}
	})
	n := m.LenLocked()
	m.Unlock()
	if n != 5 {
		t.Fatalf("%d keys left, want 5", n)
	}
}

// A store or a delete after the read copy was published is seen by the
// next lookup (the earlier design served the stale read copy).
func TestWritesAfterPublishingAreSeen(t *testing.T) {
	var m Map[string, int]
	m.Lock()
	m.StoreLocked("a", 1)
	m.Unlock()
	for range 100 {
		m.Load("a")
	}
	m.Lock()
	m.StoreLocked("a", 2)
	m.StoreLocked("b", 3)
	m.Unlock()
	if v, _ := m.Load("a"); v != 2 {
		t.Fatalf("a = %d after storing 2", v)
	}
	m.Lock()
	m.DeleteLocked("b")
	m.Unlock()
	if _, ok := m.Load("b"); ok {
		t.Fatal("b still there after its delete")
	}
}
