package fleet

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/redis/go-redis/v9"
)

// maxClockSkew is how far ahead of Redis's clock a time in the shared
// state may be and still be valid: after a failover, the new master's
// clock may be behind the old one's.
const maxClockSkew = time.Minute

// openClient makes the go-redis client for rawURL: a Sentinel client when
// it names a master_name, a cluster client when it lists further nodes
// with addr=, a client of one server otherwise. Every one ends its calls
// at their context's deadline, and tries a dial once unless the URL says
// otherwise (dialer_retries, which go-redis reads for Cluster and Sentinel
// URLs): go-redis dials again after a refused dial in the background, and
// the operation waiting for it would end at its deadline, taken for a
// late answer, instead of seeing the connection refused (see unanswered).
// The store's heartbeat dials again.
func openClient(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error holds the whole URL, and its details may hold
		// a piece of the password.
		return nil, fmt.Errorf("fleet: malformed Redis URL %s", scopekey.OneLine(redact(rawURL)))
	}
	q := u.Query()
	switch {
	case q.Has("master_name"):
		o, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		o.ContextTimeoutEnabled = true
		if !q.Has("dialer_retries") {
			o.DialerRetries = 1
		}
		return redis.NewFailoverClient(o), nil
	case q.Has("addr"):
		o, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		o.ContextTimeoutEnabled = true
		if !q.Has("dialer_retries") {
			o.DialerRetries = 1
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	o.ContextTimeoutEnabled = true
	o.DialerRetries = 1
	return redis.NewClient(o), nil
}

// redact returns rawURL without the userinfo of its authority (whatever
// precedes the last @ before the path), so that an error can show where
// it points without showing the credentials.
func redact(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return "(not a URL)"
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = "xxxxx" + rest[at:]
	}
	return scheme + "://" + rest
}

// endsAtDeadline reports whether rdb ends a call at its context's
// deadline by itself: a single-server or Sentinel client with go-redis's
// ContextTimeoutEnabled. Any other client's calls are bounded by the store
// (see Store.call).
func endsAtDeadline(rdb redis.UniversalClient) bool {
	c, ok := rdb.(*redis.Client)
	return ok && c.Options().ContextTimeoutEnabled
}

// unavailable reports whether err means Redis cannot serve the fleet now
// (no answer, a timeout, a closed connection, or a refusal of every
// command: loading, a replica, a cluster down or redirecting, an
// authentication failure, out of memory, a script running too long, its
// maxclients reached), rather than a refusal of one operation on its keys.
func unavailable(err error) bool {
	code, reply := errorCode(err)
	if !reply {
		return true
	}
	switch code {
	case "LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK",
		"NOAUTH", "WRONGPASS", "OOM", "BUSY", "MISCONF", "NOREPLICAS":
		return true
	case "ERR":
		// The one generic error that refuses every command: Redis
		// answers a connection over its maxclients with it, then closes
		// the connection.
		var re redis.Error
		return errors.As(err, &re) && strings.HasPrefix(re.Error(), maxClients)
	}
	return false
}

// maxClients is the error reply of a Redis that has as many connections
// as its maxclients setting allows.
const maxClients = "ERR max number of clients reached"

// notRun reports whether err says for certain that Redis did not run the
// command: an error reply (Redis refused it), a connection that could not
// be made, or none free in the client's pool in time (the command was
// written to no connection). Any other error (a timeout, a connection that
// closed) may have come after Redis ran it.
func notRun(err error) bool {
	var op *net.OpError
	_, reply := errorCode(err)
	return reply || (errors.As(err, &op) && op.Op == "dial") || errors.Is(err, redis.ErrPoolTimeout)
}

// late reports whether err, one unavailable reports, may be Redis's
// answer coming late: the operation's deadline passed first (a timeout,
// or no connection free or made in time), which a busy host's scheduling
// causes with no fault. A connection Redis closed or reset under the
// operation, a client closed, an error reply or a connection refused are
// not late: only a Redis that cannot serve, or is not there, gives them
// (go-redis checks a pooled connection before it uses it, so that one the
// server closed while idle is not one an operation loses).
func late(err error) bool {
	var ne net.Error
	return errors.Is(err, redis.ErrPoolTimeout) || (errors.As(err, &ne) && ne.Timeout())
}

// redirected reports whether err is a cluster node's redirection: a
// client of one server pointed at a Redis Cluster.
func redirected(err error) bool {
	code, _ := errorCode(err)
	return code == "MOVED" || code == "ASK"
}

// errorCode returns the error code of Redis's error reply err (its first
// word, which is what the protocol gives to tell errors apart); reply is
// false when err is not an error reply.
func errorCode(err error) (code string, reply bool) {
	var re redis.Error
	if !errors.As(err, &re) {
		return "", false
	}
	code, _, _ = strings.Cut(re.Error(), " ")
	return code, true
}
