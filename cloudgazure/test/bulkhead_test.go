package test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// The subscription's bulkhead slot is held for one HTTP attempt and is
// back after a success, an error answer, a transport error and a
// cancellation, over real loopback sockets.
func TestBulkheadReleasedLoopback(t *testing.T) {
	e := tcpEnv(t, resilience.Config{Azure: resilience.ProviderConfig{
		MaxRetries: ptr(1), BaseDelaySeconds: 0.01,
	}})
	groups := e.groups(subA)
	ctx := context.Background()
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("%d free slots before, want 16", n)
	}

	if _, err := groups.Get(ctx, "rg", nil); err != nil {
		t.Fatal(err)
	}
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("after a success: %d free slots, want 16", n)
	}

	e.srv.script(routeGroupGet, reply{status: http.StatusNotFound, code: "ResourceGroupNotFound"})
	if _, err := groups.Get(ctx, "rg", nil); err == nil {
		t.Fatal("want the 404")
	}
	e.srv.script(routeGroupGet, reply{status: http.StatusInternalServerError}, reply{status: http.StatusInternalServerError})
	if _, err := groups.Get(ctx, "rg", nil); err == nil {
		t.Fatal("want the 500")
	}
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("after errors: %d free slots, want 16", n)
	}

	entered := make(chan string, 1)
	e.srv.mu.Lock()
	e.srv.entered = entered
	e.srv.mu.Unlock()
	e.srv.script(routeGroupGet, reply{block: true})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := groups.Get(cctx, "rg", nil)
		done <- err
	}()
	<-entered
	if n := freeSlots(e.gov, subALower); n != 15 {
		t.Fatalf("during the attempt: %d free slots, want 15", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("after a cancellation: %d free slots, want 16", n)
	}
}

// A request cancelled while it waits, for a rate token or for a slot,
// holds nothing afterwards, and a transport error releases its slot.
func TestBulkheadReleasedWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		groups := e.groups(subA)

		// Waiting for a slot: the only slot is held by a blocked request.
		e.srv.script(routeGroupGet, reply{block: true})
		ctx1, cancel1 := context.WithCancel(context.Background())
		done1 := make(chan error, 1)
		go func() { _, err := groups.Get(ctx1, "held", nil); done1 <- err }()
		synctest.Wait()
		ctx2, cancel2 := context.WithCancel(context.Background())
		done2 := make(chan error, 1)
		go func() { _, err := groups.Get(ctx2, "queued", nil); done2 <- err }()
		synctest.Wait()
		if n := e.srv.count(routeGroupGet); n != 1 {
			t.Fatalf("%d requests reached the server, want 1 (the other waits for the slot)", n)
		}
		cancel2()
		if err := <-done2; !errors.Is(err, context.Canceled) {
			t.Fatalf("queued request: %v", err)
		}
		cancel1()
		if err := <-done1; !errors.Is(err, context.Canceled) {
			t.Fatalf("held request: %v", err)
		}
		if n := freeSlots(e.gov, subALower); n != 1 {
			t.Fatalf("%d free slots, want 1", n)
		}

		// Waiting for a token: the scope is paused.
		gd, _ := e.gov.Begin(context.Background(), resourcesA)
		gd.Pause(30 * time.Second)
		gd.End(nil)
		before := e.srv.count(routeGroupGet)
		ctx3, cancel3 := context.WithCancel(context.Background())
		done3 := make(chan error, 1)
		go func() { _, err := groups.Get(ctx3, "rg", nil); done3 <- err }()
		synctest.Wait()
		cancel3()
		if err := <-done3; !errors.Is(err, context.Canceled) {
			t.Fatalf("request waiting for a token: %v", err)
		}
		if n := e.srv.count(routeGroupGet); n != before {
			t.Fatal("the request was sent during the pause")
		}
		if n := freeSlots(e.gov, subALower); n != 1 {
			t.Fatalf("%d free slots after a cancelled wait, want 1", n)
		}

		// A transport error.
		time.Sleep(time.Minute)
		e.srv.script(routeGroupGet, reply{fail: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}})
		if _, err := groups.Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		if n := freeSlots(e.gov, subALower); n != 1 {
			t.Fatalf("%d free slots after a reset connection, want 1", n)
		}
	})
}

// Many goroutines over real loopback sockets: no race, every slot back.
func TestConcurrentLoopback(t *testing.T) {
	e := tcpEnv(t, fast())
	vnets := e.vnets(subA)
	graph := e.graph()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Go(func() {
			for range 5 {
				var err error
				if i%4 == 0 {
					_, err = cloudgazure.QueryResources(context.Background(), graph, armresourcegraph.QueryRequest{Query: ptr("Resources")})
				} else {
					_, err = vnets.Get(context.Background(), "rg", "vnet", nil)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := freeSlots(e.gov, subALower); n != 64 {
		t.Fatalf("%d free slots, want 64", n)
	}
}
