package fleet

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A Redis that refuses the store's connection is seen as one: the store
// switches to local limits saying so, and the command was not run
// (notRun), so that what it carried may be sent again. go-redis dials again
// after a refused dial (five attempts, 100 ms apart, by default) in the
// background, and the operation that waited for the dial then ends at its
// deadline, as a late answer would: the warning read "context deadline
// exceeded", and the connection refused came later, in go-redis's own
// line. The clients Open makes try a dial once (the store's heartbeat tries
// again), for the three kinds of URL; a URL's dialer_retries, which
// go-redis reads for Cluster and Sentinel URLs, is kept.
func TestARefusedConnectionIsSeenAsOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: every dial is refused
	for _, url := range []string{
		"redis://" + addr + "/0",
		"redis://" + addr + "?addr=" + addr,
	} {
		var log syncBuffer
		s, err := Open(url, WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		warn := log.lines("Redis does not answer")
		if len(warn) != 1 || !strings.Contains(warn[0], "connection refused") {
			t.Errorf("%s: Open against an address that refuses connections logged %q; want one warning naming the connection refused", url, warn)
		}
	}
	for url, want := range map[string]int{
		"redis://" + addr + "/0":                                  1,
		"redis://" + addr + "?addr=" + addr:                       1,
		"redis://" + addr + "?addr=" + addr + "&dialer_retries=3": 3,
		"redis://" + addr + "/0?master_name=m":                    1,
		"redis://" + addr + "/0?master_name=m&dialer_retries=4":   4,
	} {
		rdb, err := openClient(url)
		if err != nil {
			t.Fatal(err)
		}
		if got := dialerRetries(rdb); got != want {
			t.Errorf("%s: the client dials %d times, want %d", url, got, want)
		}
		rdb.Close()
	}
}

// dialerRetries returns how many times rdb tries a dial.
func dialerRetries(rdb redis.UniversalClient) int {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().DialerRetries
	case *redis.ClusterClient:
		return c.Options().DialerRetries
	}
	return -1
}
