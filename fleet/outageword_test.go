package fleet

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// A local limit is made for the outage the store says it is in
// (sharedBucket.fallback reads Store.outage): the switch to local limits
// (fail) must reach a reader whole. Were it two writes (on local limits,
// then a new outage counted), a call between them would make its local
// bucket for the outage before, and the next call, reading the new one,
// would make another: what a throttle taught the first (its halved rate)
// would be lost. A reader of the store's mode therefore never sees, for
// one outage, the shared state and then local limits: an outage begins
// on local limits and ends on the shared state, once.
func TestAReaderNeverSeesTheSwitchToLocalLimitsHalfMade(t *testing.T) {
	s := &Store{}
	s.log.Store(quiet)
	const switches = 20000
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // Redis failing and answering again, as fast as it can
		defer wg.Done()
		defer done.Store(true)
		err := errors.New("connection refused")
		for range switches {
			s.fail(err)
			s.toShared()
		}
	}()
	var torn, reads int
	lastEp, lastOut := int64(0), false
	for !done.Load() {
		ep, out := s.outage()
		reads++
		switch {
		case ep < lastEp:
			t.Fatalf("outage %d read after outage %d", ep, lastEp)
		case ep == lastEp && out && !lastOut:
			torn++ // outage ep on the shared state, then on local limits again
		}
		lastEp, lastOut = ep, out
	}
	wg.Wait()
	if torn > 0 {
		t.Fatalf("%d of %d reads saw an outage that had ended on the shared state go back to local limits: the switch to local limits reached them half made", torn, reads)
	}
	if ep, out := s.outage(); ep != switches || out {
		t.Fatalf("after %d switches to local limits and back: outage %d, on local limits %v", switches, ep, out)
	}
	if f := s.Stats().Fallbacks; f != switches {
		t.Fatalf("%d fallbacks counted, want %d", f, switches)
	}
}
