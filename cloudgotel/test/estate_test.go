package test

import (
	"fmt"
	"testing"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/observe"
)

// WithoutAccount is for an estate of more accounts than the attribute
// cache holds: its scopes share a few attribute sets, which stay cached,
// so that recording a call of an account seen before allocates nothing,
// however many accounts there are.
func TestEstateWithoutAccountRecordsWithoutAllocating(t *testing.T) {
	obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(newMeter()), cloudgotel.WithoutAccount())
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Unregister()
	const accounts = 20000 // more than the cache's 16,384 sets
	evs := make([]observe.Event, accounts)
	for i := range evs {
		sc := vpcs
		sc.Account = fmt.Sprintf("%012d", i)
		evs[i] = observe.Event{Kind: observe.Call, Scope: sc}
		obs.Observe(evs[i])
	}
	if n := testing.AllocsPerRun(3, func() {
		for _, ev := range evs {
			obs.Observe(ev)
		}
	}); n != 0 {
		t.Errorf("%v allocations per %d calls, one per account, of one operation", n, accounts)
	}
}
