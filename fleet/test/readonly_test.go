package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/resilience"
)

// keyState is what Redis holds at a key: its type, its value (a hash's
// fields, sorted, or a string) and its TTL.
type keyState struct {
	typ, value string
	ttl        time.Duration
}

func readKey(t *testing.T, rdb redis.UniversalClient, k string) keyState {
	t.Helper()
	ctx := context.Background()
	ks := keyState{typ: rdb.Type(ctx, k).Val(), ttl: rdb.PTTL(ctx, k).Val()}
	switch ks.typ {
	case "hash":
		var fs []string
		for f, v := range rdb.HGetAll(ctx, k).Val() {
			fs = append(fs, f+"="+v)
		}
		slices.Sort(fs)
		ks.value = strings.Join(fs, " ")
	case "string":
		ks.value = rdb.Get(ctx, k).Val()
	}
	return ks
}

// A read of the fleet's state (the governor's Inspect and Delay, which
// read a scope's buckets and breaker in Redis) changes nothing there: a
// key whose TTL someone removed keeps none, one with a TTL keeps it (no
// longer), and a value the scripts would not have written (an unknown
// breaker state, a rate that is not a number, a key of another type) is
// read as absent and left as it is, for the next write to repair. (The
// snapshot scripts gave a key without a TTL its TTL again, and deleted a
// key they found invalid: a read with a side effect.)
func TestAReadChangesNothingInRedis(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{}
		p := newProcess(t, be, prefix, cfg)
		ctx := context.Background()
		// vpcs: a bucket and a breaker the store wrote (a failure counted).
		if err := p.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		p.do(t, vpcs, func(context.Context) error { return transient }, once)
		subnets, tables := vpcs, vpcs
		subnets.Operation, tables.Operation = "DescribeSubnets", "DescribeRouteTables"
		key := func(sc resilience.Scope, kind string) string {
			return prefix + ":{aws/123456789012/us-east-1/ec2/" + sc.Operation + "}:" + kind
		}
		// subnets: values no script writes, with a TTL.
		p.rdb.HSet(ctx, key(subnets, "breaker"), "state", "ajar", "until", "0", "cooldown", "30000000", "failures", "0")
		p.rdb.HSet(ctx, key(subnets, "bucket"), "t0", "0", "paused", "0", "rate", "nan")
		// tables: keys of another type.
		p.rdb.Set(ctx, key(tables, "breaker"), "junk", 0)
		p.rdb.Set(ctx, key(tables, "bucket"), "junk", 0)
		var ks []string
		for _, k := range keys(t, p.rdb, prefix+"*") {
			if strings.HasSuffix(k, ":bucket") || strings.HasSuffix(k, ":breaker") {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		if len(ks) < 6 {
			t.Fatalf("keys %v, want vpcs's bucket and breaker and those the test wrote", ks)
		}
		before := map[string]keyState{}
		for _, k := range ks {
			if strings.Contains(k, "DescribeSubnets") {
				p.rdb.PExpire(ctx, k, time.Hour)
			} else {
				p.rdb.Persist(ctx, k) // its TTL removed
			}
			before[k] = readKey(t, p.rdb, k)
		}
		q := newProcess(t, be, prefix, cfg) // holds no entry of the scopes: it reads Redis
		for _, sc := range []resilience.Scope{vpcs, subnets, tables} {
			q.gov.Inspect(sc)
			q.gov.Delay(sc)
			p.gov.Inspect(sc)
		}
		for _, k := range ks {
			b, a := before[k], readKey(t, p.rdb, k)
			changed := a.typ != b.typ || a.value != b.value
			switch {
			case b.ttl < 0:
				changed = changed || a.ttl != b.ttl
			default: // counting down, on a Redis whose clock runs
				changed = changed || a.ttl > b.ttl || a.ttl < b.ttl-10*time.Second
			}
			if changed {
				t.Errorf("key %s after reads: %s; before: %s", k, show(a), show(b))
			}
		}
	})
}

func show(ks keyState) string {
	return fmt.Sprintf("%s %q, TTL %v", ks.typ, ks.value, ks.ttl)
}
