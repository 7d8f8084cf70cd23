package test

import "testing"

// An Event Grid topic's name is unique within its region only: orders in
// westus2 (orders.westus2-1.eventgrid.azure.net) and orders in eastus
// (orders.eastus-1.eventgrid.azure.net) are two topics, which a
// deployment stamped out per region names alike, each with limits of its
// own. One's requests neither take the other's slots of the account's
// bulkhead nor spend its account bucket.
func TestSameNamedTopicsInTwoRegionsAreTwo(t *testing.T) {
	// One slot per account: a publish to orders in westus2 answered in
	// 10 s holds its account's slot that long.
	checkOwnSlots(t, "https://orders.westus2-1.eventgrid.azure.net/api/events", "https://orders.eastus-1.eventgrid.azure.net/api/events",
		azIn("orders.westus2", "westus2", "eventgrid"), azIn("orders.eastus", "eastus", "eventgrid"))
}
