package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// An Event Grid topic, domain or namespace answers at
// <name>.<region>-1.eventgrid.<suffix> (azure.net, azure.cn, azure.us: the
// "privatelink.eventgrid" zones of Microsoft's "Azure Private Endpoint
// private DNS zone values", public, China and Government), its publishing
// limits its own, and a name unique within its region only; a Web PubSub
// service at <name>.webpubsub.<azure.com|azure.cn|azure.us>, its units
// its own. Each is governed in its resource's scope,
// azure/<name>.<region>/<region>/eventgrid and azure/<name>/*/webpubsub, and not
// in azure/*/*/resources with the tenant's Resource Manager calls. A host
// of no such shape, or under a suffix of no Azure cloud, stays Resource
// Manager's.
func TestScopeOfURLReadsEventGridAndWebPubSub(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://topic.westus2-1.eventgrid.azure.net/api/events?api-version=2018-01-01", azIn("topic.westus2", "westus2", "eventgrid")},
		{"https://Topic.EastUS-1.EventGrid.Azure.net:443/api/events", azIn("topic.eastus", "eastus", "eventgrid")},
		{"https://ns.westeurope-1.eventgrid.azure.net/topics/t:publish?api-version=2023-11-01", azIn("ns.westeurope", "westeurope", "eventgrid")},
		{"https://topic.westus2-1.eventgrid.azure.net./api/events", azIn("topic.westus2", "westus2", "eventgrid")},
		{"https://topic.chinaeast2-1.eventgrid.azure.cn/api/events", azIn("topic.chinaeast2", "chinaeast2", "eventgrid")},
		{"https://topic.usgovvirginia-1.eventgrid.azure.us/api/events", azIn("topic.usgovvirginia", "usgovvirginia", "eventgrid")},
		{"https://hub.webpubsub.azure.com/api/hubs/chat/:send?api-version=2024-01-01", az("hub", "webpubsub")},
		{"https://HUB.WebPubSub.Azure.com:443/api/health", az("hub", "webpubsub")},
		{"https://hub.webpubsub.azure.cn/api/health", az("hub", "webpubsub")},
		{"https://hub.webpubsub.azure.us/api/health", az("hub", "webpubsub")},
		// A port, a host in upper case, a region label's other digits:
		// the same resource, in lower case.
		{"https://ORDERS.WESTUS2-1.EVENTGRID.AZURE.NET:8443/api/events", azIn("orders.westus2", "westus2", "eventgrid")},
		{"https://orders.westus2-12.eventgrid.azure.net/api/events", azIn("orders.westus2", "westus2", "eventgrid")},
		{"https://hub.webpubsub.azure.com:8080/api/health", az("hub", "webpubsub")},
		// No name, no region, a region label of another shape, another
		// suffix: by the path.
		{"https://westus2-1.eventgrid.azure.net/api/events", az("", "resources")},
		{"https://topic.eventgrid.azure.net/api/events", az("", "resources")},
		{"https://topic.-1.eventgrid.azure.net/api/events", az("", "resources")},
		{"https://topic.westus2-.eventgrid.azure.net/api/events", az("", "resources")},
		{"https://topic.westus2.eventgrid.azure.net/api/events", az("", "resources")},
		{"https://topic.westus2-1.eventgrid.azure.net.example.org/api/events", az("", "resources")},
		{"https://topic.westus2-1.eventgrid.example.net/api/events", az("", "resources")},
		{"https://hub.webpubsub.azure.com.example.org/api/health", az("", "resources")},
		{"https://webpubsub.azure.com/api/health", az("", "resources")},
		// More labels than a resource's host has, IP literals (with a
		// port, IPv6 with a zone): no resource's scope, none of a label.
		{"https://a.orders.westus2-1.eventgrid.azure.net/api/events", az("", "resources")},
		{"https://orders.westus2-1.a.eventgrid.azure.net/api/events", az("", "resources")},
		{"https://a.hub.webpubsub.azure.com/api/health", az("", "resources")},
		{"https://hub.a.webpubsub.azure.com/api/health", az("", "resources")},
		{"https://10.0.0.4/api/events", az("", "resources")},
		{"https://10.0.0.4:8443/api/health", az("", "resources")},
		{"https://[2001:db8::1]:443/api/events", az("", "resources")},
		{"https://[fe80::1%25eth0.5]/api/events", az("", "resources")},
	})
	checkNoAllocs(t,
		"https://topic.westus2-1.eventgrid.azure.net/api/events",
		"https://hub.webpubsub.azure.com/api/health",
	)

	// A throttled topic (429, Retry-After: 30) holds neither another
	// topic, a Web PubSub service nor the tenant's Resource Manager calls.
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		send := governedSend(t, context.Background(), gov, throttleTransport{"Retry-After", "30"})
		if st, _ := send("https://busytopic.westus2-1.eventgrid.azure.net/api/events"); st != http.StatusTooManyRequests {
			t.Fatalf("busy topic answered %d", st)
		}
		for _, u := range []string{
			"https://othertopic.westus2-1.eventgrid.azure.net/api/events",
			"https://hub.webpubsub.azure.com/api/health",
			"https://management.azure.com/subscriptions?api-version=2022-12-01",
		} {
			if st, took := send(u); st != http.StatusOK || took != 0 {
				t.Errorf("%s: %d after %v, want 200 at once: a topic's 429 held it", u, st, took)
			}
		}
		if _, took := send("https://busytopic.westus2-1.eventgrid.azure.net/api/events"); took < 30*time.Second {
			t.Errorf("the throttled topic's next request went after %v, want 30 s", took)
		}
	})
}
