package fleet

import (
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/scopekey"
)

// clusterSlot returns the Redis Cluster slot of key as the cluster
// computes it (the cluster specification's key distribution model): the
// CRC16 (XMODEM) of its hash tag modulo 16384, the tag being what lies
// between the first '{' and the first '}' after it when that is not
// empty, the whole key otherwise.
func clusterSlot(key string) (slot int, tag string) {
	tag = key
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			tag = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(tag); k++ {
		crc ^= uint16(tag[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384, tag
}

func TestClusterSlotIsRedisCluster(t *testing.T) {
	// The specification's examples: 123456789's CRC16 is 0x31C3, and the
	// tagged keys hash as their tag.
	if s, _ := clusterSlot("123456789"); s != 0x31C3%16384 {
		t.Fatalf("slot of 123456789 = %d, want %d", s, 0x31C3%16384)
	}
	a, _ := clusterSlot("{user1000}.following")
	b, _ := clusterSlot("{user1000}.followers")
	c, _ := clusterSlot("user1000")
	if a != b || a != c {
		t.Fatalf("slots %d %d %d, want one", a, b, c)
	}
	if _, tag := clusterSlot("foo{}{bar}"); tag != "foo{}{bar}" {
		t.Fatalf("tag of foo{}{bar} = %q, want the whole key", tag)
	}
	if _, tag := clusterSlot("foo{{bar}}zap"); tag != "{bar" {
		t.Fatalf("tag of foo{{bar}}zap = %q, want {bar", tag)
	}
}

// TestScopeKeysShareASlotWhateverTheScopeHolds states that the bucket's
// and the breaker's keys of a scope hash to one Redis Cluster slot (the
// lease script touches both: keys of two slots are a CROSSSLOT error on
// a cluster), and that the slot's tag is the scope's whole key, so that
// scopes spread over the cluster as their keys do, whatever braces a part
// holds: a provider a user names, an organisation a URL names
// (/orgs/%7Dx/audit-log).
func TestScopeKeysShareASlotWhateverTheScopeHolds(t *testing.T) {
	s := &Store{cfg: config{prefix: "cloudg"}}
	keys := []string{
		"gcp/projects%2Fp1/*/pubsub/topics_list",
		"}x/*/*/svc",
		"}/acct",
		"{/acct",
		"{}",
		"a}b/*/*/svc",
		"a{b}c/*/*/svc",
		"github/octo/orgs%2F}x/audit_log",
		"github/octo/orgs%2F}y/audit_log",
		"github/octo/orgs%2F{x}/audit_log",
		"github/octo/orgs%2F{y}/audit_log",
	}
	tags := map[string]string{}
	for _, key := range keys {
		bk, brk := s.scopeKeys(key)
		bs, btag := clusterSlot(bk)
		rs, rtag := clusterSlot(brk)
		if bs != rs {
			t.Errorf("scope key %q: bucket %q in slot %d, breaker %q in slot %d: a script touching both is a CROSSSLOT error", key, bk, bs, brk, rs)
			continue
		}
		if other, ok := tags[btag]; ok {
			t.Errorf("scope keys %q and %q share the hash tag %q: the tag is not the scope's key", other, key, btag)
		}
		tags[btag] = key
		if btag != rtag || btag == bk {
			t.Errorf("scope key %q: tags %q and %q, want the scope's key in braces", key, btag, rtag)
		}
	}
}

// TestAPrefixsBracesLeaveTheScopesTag states that a prefix holding braces
// (WithPrefix) does not take the place of the scope's hash tag: the
// cluster takes the first '{' of a key and the first '}' after it, so a
// prefix "x{}" left every key's tag empty (each whole key hashed, the
// bucket and the breaker of a scope in two slots: CROSSSLOT for every
// lease), and "app{1}" made "1" the tag of every scope (the whole fleet's
// state in one slot).
func TestAPrefixsBracesLeaveTheScopesTag(t *testing.T) {
	for _, prefix := range []string{"x{}", "{}", "app{1}", "{", "}", "a}{b", "}{"} {
		var c config
		WithPrefix(prefix).apply(&c)
		s := &Store{cfg: c}
		tags := map[string]string{}
		for _, key := range []string{"aws/1/us-east-1/ec2/x", "aws/2/us-east-1/ec2/x", "}x/*/*/svc"} {
			bk, brk := s.scopeKeys(key)
			bs, btag := clusterSlot(bk)
			rs, rtag := clusterSlot(brk)
			if bs != rs {
				t.Errorf("prefix %q, scope key %q: bucket %q in slot %d, breaker %q in slot %d: a script touching both is a CROSSSLOT error", prefix, key, bk, bs, brk, rs)
				continue
			}
			if want := hashTag(key); btag != want || rtag != want {
				t.Errorf("prefix %q, scope key %q: tags %q and %q, want the scope's key %q", prefix, key, btag, rtag, want)
			}
			if other, ok := tags[btag]; ok {
				t.Errorf("prefix %q: scope keys %q and %q share the hash tag %q", prefix, other, key, btag)
			}
			tags[btag] = key
		}
		if _, tag := clusterSlot(s.key("{budget:aws}")); tag != "budget:aws" {
			t.Errorf("prefix %q: the budget's key %q has the tag %q, want \"budget:aws\"", prefix, s.key("{budget:aws}"), tag)
		}
	}
	var c config
	WithPrefix("cloudg:eu").apply(&c)
	if c.prefix != "cloudg:eu" {
		t.Errorf("prefix \"cloudg:eu\" read as %q, want it as it is (no brace)", c.prefix)
	}
}

// A provider's name a user gives may hold a brace, or a '%', '/' or '*':
// its retry budget's key holds the name whole in its hash tag, escaped as
// a scope's part and its braces as in a scope's tag, so that "}x" does not
// end the tag early and no two names share a budget ("a}x" and "a%7Dx"
// did, once escaped). A name without those characters keeps its key.
func TestABudgetsKeyHoldsItsProvidersNameWhole(t *testing.T) {
	s := &Store{cfg: config{prefix: "cloudg"}}
	seen := map[string]string{}
	for _, provider := range []string{"aws", "}x", "a}x", "a%7Dx", "{x}", "a/b", "a%2Fb", "*", ""} {
		key := s.key(budgetKey(provider))
		_, tag := clusterSlot(key)
		want := "budget:" + hashTag(scopekey.Format(&[5]string{provider}, true, 1))
		if tag != want || strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 {
			t.Errorf("provider %q: key %q, tag %q; want the tag %q, one brace of each kind", provider, key, tag, want)
		}
		if other, ok := seen[key]; ok {
			t.Errorf("providers %q and %q share the budget key %q", other, provider, key)
		}
		seen[key] = provider
	}
	if got := s.key(budgetKey("aws")); got != "cloudg:{budget:aws}" {
		t.Errorf("aws's budget key %q, want cloudg:{budget:aws} as before", got)
	}
}
