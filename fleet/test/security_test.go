package test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// aclUser returns the ACL SETUSER command that makes user, of password pw,
// a fleet's Redis user confined to prefix: the README's line, read from
// the README (readmeACLLine), its user, password and prefix replaced, so
// that the line a user copies is the one the tests run with.
func aclUser(t testing.TB, user, pw, prefix string) []any {
	t.Helper()
	var rule []any
	for i, f := range strings.Fields(readmeACLLine(t)) {
		switch {
		case i == 2:
			f = user
		case strings.HasPrefix(f, ">"):
			f = ">" + pw
		case strings.HasPrefix(f, "~"):
			f = "~" + prefix + ":*"
		}
		rule = append(rule, f)
	}
	return rule
}

// readmeACLLine is the README's ACL SETUSER line for a fleet's user.
func readmeACLLine(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "ACL SETUSER cloudg ") {
			found = append(found, l)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], " >LONG-RANDOM-PASSWORD ") || !strings.Contains(found[0], " ~cloudg:* ") {
		t.Fatalf("the README's ACL lines: %q; want one, with >LONG-RANDOM-PASSWORD and ~cloudg:*", found)
	}
	return found[0]
}

// realBackends are the real Redis servers ./scripts/test starts.
func realBackends(t *testing.T) []backend {
	var bs []backend
	if be, ok := redisServer(t); ok {
		bs = append(bs, be)
	}
	if be, ok := redisCluster(); ok {
		bs = append(bs, be)
	}
	if len(bs) == 0 {
		t.Skip("needs a real redis-server (CLOUDG_REDIS_URL) or Redis Cluster (CLOUDG_REDIS_CLUSTER_ADDRS); ./scripts/test starts both")
	}
	return bs
}

// doer sends any command.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// eachNode runs f on the server, or on every master of a cluster.
func eachNode(t *testing.T, rdb redis.UniversalClient, f func(c doer) error) {
	t.Helper()
	ctx := context.Background()
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error { return f(c) })
	} else {
		err = f(rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// withUser returns the backend's URL with user and password.
func withUser(be backend, user, pw string) string {
	return strings.Replace(be.url(), "redis://", "redis://"+user+":"+pw+"@", 1)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// exercise drives every kind of operation of the store: tokens, a
// throttle, a breaker's failures, paid retries and refunds.
func exercise(t *testing.T, gov *resilience.Governor) {
	t.Helper()
	ctx := context.Background()
	do := func(fn func(context.Context) error) error {
		return resilience.Do(ctx, vpcs, fn, resilience.WithGovernor(gov), once)
	}
	for range 5 {
		if err := do(ok); err != nil {
			t.Fatalf("a call failed: %v", err)
		}
	}
	do(throttl)
	gd, err := gov.Begin(ctx, vpcs)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		failAndRetry(gd)
	}
	gd.End(transient)
	gov.Inspect(vpcs)
	time.Sleep(250 * time.Millisecond) // heartbeats, and the budget's refunds
}

// A Redis user whose ACL allows only the fleet's commands on the keys of
// its prefix runs the fleet without a refusal; it reaches no other key, and
// a store with another prefix is refused (and goes on with local limits:
// no call fails).
func TestAnACLUserConfinedToThePrefix(t *testing.T) {
	for _, be := range realBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			admin := be.client()
			user, pw, prefix := "cloudg-test-"+randomHex(4), randomHex(16), uniquePrefix(t)
			rule := aclUser(t, user, pw, prefix)
			eachNode(t, admin, func(c doer) error { return c.Do(ctx, rule...).Err() })
			t.Cleanup(func() {
				eachNode(t, admin, func(c doer) error { return c.Do(ctx, "ACL", "DELUSER", user).Err() })
				admin.Close()
			})

			// A cold cluster client (the slots, a connection per node) may take
			// longer than the default timeout on a loaded machine.
			store, err := fleet.Open(withUser(be, user, pw), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithTimeout(time.Second), fleet.WithHeartbeat(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(3), Controller: "goodput"}}
			gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(store))
			if err != nil {
				t.Fatal(err)
			}
			exercise(t, gov)
			if st := store.Stats(); st.RedisErrors != 0 || st.Fallbacks != 0 || st.Degraded {
				t.Fatalf("the ACL user's store: %+v", st)
			}
			if ks := keys(t, admin, prefix+":*"); len(ks) < 4 {
				t.Fatalf("keys %v", ks)
			}

			// The user reaches no other key.
			userClient := userOf(be, user, pw)
			defer userClient.Close()
			if err := userClient.Set(ctx, "elsewhere:"+prefix, "x", time.Minute).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
				t.Fatalf("the ACL user wrote outside its prefix: %v", err)
			}

			// Another prefix: refused, and no call fails.
			other, err := fleet.Open(withUser(be, user, pw), fleet.WithPrefix("elsewhere-"+prefix), fleet.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			og, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(other))
			for range 5 {
				if err := resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(og)); err != nil {
					t.Fatalf("a call failed because the ACL refused its keys: %v", err)
				}
			}
			if st := other.Stats(); st.RedisErrors == 0 || st.Degraded {
				t.Fatalf("a store outside the user's prefix: %+v, want refusals, not Redis unavailable", st)
			}
		})
	}
}

// userOf returns a client of the backend as user.
func userOf(be backend, user, pw string) redis.UniversalClient {
	if be.cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: be.addrs, Username: user, Password: pw})
	}
	return redis.NewClient(&redis.Options{Addr: be.addr(), Username: user, Password: pw, MaxRetries: -1})
}

// TLS with a CA of the test's own (made here with crypto/x509): a client
// given the CA, and a client certificate the server requires, through
// fleet.New. Without the CA (rediss:// through Open trusts the system's
// roots) or without a client certificate the store cannot connect, and no
// call fails.
func TestTLSWithACustomCAThroughNew(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	srvCert, srvKey := ca.issue(t, "redis-server", x509.ExtKeyUsageServerAuth)
	cliCert, cliKey := ca.issue(t, "cloudg", x509.ExtKeyUsageClientAuth)
	files := map[string][]byte{"ca.crt": ca.certPEM, "server.crt": srvCert, "server.key": srvKey}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	srv := startServer(t, port, "--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "server.crt"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.crt"), "--tls-auth-clients", "yes")

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.certPEM)
	pair, err := tls.X509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	run := func(rdb redis.UniversalClient) (*fleet.Store, error) {
		store := fleet.New(rdb, fleet.WithPrefix(uniquePrefix(t)), fleet.WithLogger(quiet))
		gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
		var err error
		for range 5 {
			if err = resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov)); err != nil {
				break
			}
		}
		resilience.Do(context.Background(), vpcs, throttl, resilience.WithGovernor(gov), once)
		return store, err
	}

	rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, TLSConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
	}})
	defer rdb.Close()
	store, err := run(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if st := store.Stats(); st.Degraded || st.RedisErrors != 0 || st.Fallbacks != 0 {
		t.Fatalf("over TLS with the CA: %+v", st)
	}
	if n := rdb.DBSize(context.Background()).Val(); n < 3 {
		t.Fatalf("%d keys in the TLS Redis", n)
	}

	// Open's rediss:// trusts the system's roots, not the test's CA.
	viaOpen, err := fleet.Open("rediss://"+srv.addr+"/0", fleet.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer viaOpen.Close()
	if st := viaOpen.Stats(); !st.Degraded {
		t.Fatalf("rediss:// without the CA connected: %+v", st)
	}
	noCert := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	defer noCert.Close()
	s2, err := run(noCert)
	if err != nil {
		t.Fatalf("a call failed because the TLS handshake did: %v", err)
	}
	defer s2.Close()
	if st := s2.Stats(); !st.Degraded {
		t.Fatalf("a client without a certificate connected: %+v", st)
	}
}

// ca is a certificate authority of the test's own.
type ca struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newCA(t *testing.T) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cloudg test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &ca{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate for 127.0.0.1 signed by the CA, and its key,
// in PEM.
func (c *ca) issue(t *testing.T, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// redisLogs takes go-redis's own log lines.
type redisLogs struct{ w *syncBuffer }

func (l redisLogs) Printf(_ context.Context, format string, v ...any) {
	fmt.Fprintf(l.w, format+"\n", v...)
}

// stderrLogs is go-redis's default: its lines on standard error.
type stderrLogs struct{ l *log.Logger }

func (l stderrLogs) Printf(_ context.Context, format string, v ...any) { l.l.Printf(format, v...) }

var redisLoggerMu sync.Mutex

// The URL's password appears in no log line, the store's or go-redis's:
// Redis unreachable (one server, a cluster, Sentinel), and the password
// refused.
func TestThePasswordIsNeverLogged(t *testing.T) {
	redisLoggerMu.Lock()
	defer redisLoggerMu.Unlock()
	var logs syncBuffer
	redis.SetLogger(redisLogs{&logs})
	defer redis.SetLogger(stderrLogs{log.New(os.Stderr, "redis: ", log.LstdFlags)})
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	pw := "pw-" + randomHex(12)
	urls := []string{
		"redis://alice:" + pw + "@127.0.0.1:1/0",
		"redis://alice:" + pw + "@127.0.0.1:1?addr=127.0.0.1:2",
		"redis://alice:" + pw + "@127.0.0.1:1/0?master_name=mymaster",
	}
	if be, ok := redisServer(t); ok {
		urls = append(urls, "redis://nobody-"+randomHex(4)+":"+pw+"@"+be.addr()+"/0") // WRONGPASS
	}
	for _, u := range urls {
		store, err := fleet.Open(u, fleet.WithLogger(logger), fleet.WithTimeout(100*time.Millisecond), fleet.WithHeartbeat(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
		for range 3 {
			err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov))
			var de *resilience.DeadlineExceededError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s: %v", u, err)
			}
		}
		time.Sleep(150 * time.Millisecond)
		store.Close()
	}
	out := logs.String()
	if !strings.Contains(out, "Redis does not answer") {
		t.Fatalf("no fallback was logged:\n%s", out)
	}
	if strings.Contains(out, pw) {
		t.Fatalf("a log line shows the password:\n%s", out)
	}
}
