package cloudggcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	asset "cloud.google.com/go/asset/apiv1"
	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"
)

// fakeAsset is an AssetService that serves numbered items in pages (the
// page token is the offset of the page's first item), and fails requests as
// scripted.
type fakeAsset struct {
	assetpb.UnimplementedAssetServiceServer

	total    int              // items of every listing RPC
	pageSize int              // when the request has none
	empty    bool             // serve an empty page (next token "N*") before each page N > 0
	listErr  error            // ListAssets always fails with it
	seen     func(rpc string) // when set, called as each request arrives (set it before serving)

	mu       sync.Mutex
	script   map[string][]error // rpc@token -> errors for the next attempts
	requests []request
}

type request struct {
	rpc, token string
	size       int32
	at         time.Time
	err        error
}

func newFake(total int) *fakeAsset {
	return &fakeAsset{total: total, pageSize: 10, script: map[string][]error{}}
}

// fail makes the next attempts of rpc for the page at token fail with errs.
func (f *fakeAsset) fail(rpc, token string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := rpc + "@" + token
	f.script[key] = append(f.script[key], errs...)
}

// attempt records a request and returns its scripted error, if any.
func (f *fakeAsset) attempt(rpc, token string, size int32) error {
	if f.seen != nil {
		f.seen(rpc)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := rpc + "@" + token
	var err error
	if errs := f.script[key]; len(errs) > 0 {
		err, f.script[key] = errs[0], errs[1:]
	}
	f.requests = append(f.requests, request{rpc: rpc, token: token, size: size, at: time.Now(), err: err})
	return err
}

// reqs returns the requests of rpc so far.
func (f *fakeAsset) reqs(rpc string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.requests {
		if r.rpc == rpc {
			out = append(out, r)
		}
	}
	return out
}

// page returns the names of the items of the page at token, and the next
// token.
func (f *fakeAsset) page(token string, size int32) ([]string, string, error) {
	if size <= 0 {
		size = int32(f.pageSize)
	}
	if f.empty && token != "" && !strings.HasSuffix(token, "*") {
		return nil, token + "*", nil
	}
	start := 0
	if token != "" {
		n, err := strconv.Atoi(strings.TrimSuffix(token, "*"))
		if err != nil {
			return nil, "", status.Error(codes.InvalidArgument, "bad page token")
		}
		start = n
	}
	end := min(start+int(size), f.total)
	names := make([]string, 0, end-start)
	for i := start; i < end; i++ {
		names = append(names, fmt.Sprintf("a%d", i))
	}
	next := ""
	if end < f.total {
		next = strconv.Itoa(end)
	}
	return names, next, nil
}

func (f *fakeAsset) ListAssets(_ context.Context, req *assetpb.ListAssetsRequest) (*assetpb.ListAssetsResponse, error) {
	if err := f.attempt(RPCListAssets, req.GetPageToken(), req.GetPageSize()); err != nil {
		return nil, err
	}
	if f.listErr != nil {
		return nil, f.listErr
	}
	names, next, err := f.page(req.GetPageToken(), req.GetPageSize())
	if err != nil {
		return nil, err
	}
	resp := &assetpb.ListAssetsResponse{NextPageToken: next}
	for _, n := range names {
		resp.Assets = append(resp.Assets, &assetpb.Asset{Name: n})
	}
	return resp, nil
}

func (f *fakeAsset) SearchAllResources(_ context.Context, req *assetpb.SearchAllResourcesRequest) (*assetpb.SearchAllResourcesResponse, error) {
	if err := f.attempt(RPCSearchAllResources, req.GetPageToken(), req.GetPageSize()); err != nil {
		return nil, err
	}
	names, next, err := f.page(req.GetPageToken(), req.GetPageSize())
	if err != nil {
		return nil, err
	}
	resp := &assetpb.SearchAllResourcesResponse{NextPageToken: next}
	for _, n := range names {
		resp.Results = append(resp.Results, &assetpb.ResourceSearchResult{Name: n})
	}
	return resp, nil
}

func (f *fakeAsset) SearchAllIamPolicies(_ context.Context, req *assetpb.SearchAllIamPoliciesRequest) (*assetpb.SearchAllIamPoliciesResponse, error) {
	if err := f.attempt(RPCSearchAllIamPolicies, req.GetPageToken(), req.GetPageSize()); err != nil {
		return nil, err
	}
	names, next, err := f.page(req.GetPageToken(), req.GetPageSize())
	if err != nil {
		return nil, err
	}
	resp := &assetpb.SearchAllIamPoliciesResponse{NextPageToken: next}
	for _, n := range names {
		resp.Results = append(resp.Results, &assetpb.IamPolicySearchResult{Resource: n})
	}
	return resp, nil
}

func (f *fakeAsset) GetFeed(ctx context.Context, req *assetpb.GetFeedRequest) (*assetpb.Feed, error) {
	if err := f.attempt("GetFeed", "", 0); err == errHold {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	} else if err != nil {
		return nil, err
	}
	return &assetpb.Feed{Name: req.GetName()}, nil
}

func (f *fakeAsset) BatchGetAssetsHistory(_ context.Context, req *assetpb.BatchGetAssetsHistoryRequest) (*assetpb.BatchGetAssetsHistoryResponse, error) {
	if err := f.attempt("BatchGetAssetsHistory", "", 0); err != nil {
		return nil, err
	}
	return &assetpb.BatchGetAssetsHistoryResponse{}, nil
}

// errHold, scripted for GetFeed, holds the attempt until its context ends.
var errHold = errors.New("fake: hold the attempt")

// Provider errors, as the real service sends them.
func throttled(delay time.Duration) error {
	st := status.New(codes.ResourceExhausted, "Quota exceeded for quota metric 'List Assets requests'")
	if delay > 0 {
		st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	}
	return st.Err()
}

func unavailable() error {
	return status.Error(codes.Unavailable, "The service is currently unavailable.")
}

func denied() error {
	return status.Error(codes.PermissionDenied, "The caller does not have permission")
}

// startTCP serves srv on a real 127.0.0.1 listener and returns an asset
// client for it, built the way a program points a client at an endpoint.
func startTCP(t testing.TB, srv assetpb.AssetServiceServer, opts ...option.ClientOption) *asset.Client {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	assetpb.RegisterAssetServiceServer(gs, srv)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	opts = append([]option.ClientOption{
		option.WithEndpoint(lis.Addr().String()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}, opts...)
	c, err := asset.NewClient(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startBuf serves srv on an in-memory bufconn listener: every goroutine
// blocks on channels and sync.Cond, so it runs inside a testing/synctest
// bubble, in virtual time (gax's backoff sleeps included). Call it inside
// the bubble.
func startBuf(t *testing.T, srv assetpb.AssetServiceServer, opts ...option.ClientOption) *asset.Client {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	assetpb.RegisterAssetServiceServer(gs, srv)
	go gs.Serve(lis)
	opts = append([]option.ClientOption{
		option.WithEndpoint("passthrough:///bufconn"),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		})),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}, opts...)
	c, err := asset.NewClient(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		gs.Stop()
		lis.Close()
	})
	return c
}

// newGov returns a governor with cfg applied.
func newGov(t testing.TB, cfg resilience.Config) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func intp(v int) *int { return &v }

// scopeStats returns the run's counters of a service scope.
// scopeStats returns the counters of the service scope whose String is
// name (the Summary keys them by Scope.Key, which escapes the / of a
// GCP account).
func scopeStats(g *resilience.Governor, s *resilience.Stats, name string) resilience.Counters {
	for _, c := range g.Summary(s).Scopes {
		if c.Scope.String() == name {
			return c
		}
	}
	return resilience.Counters{}
}

func names[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}

func seq(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("a%d", i))
	}
	return out
}

// offsets returns the times of reqs relative to start.
func offsets(reqs []request, start time.Time) []time.Duration {
	out := make([]time.Duration, len(reqs))
	for i, r := range reqs {
		out[i] = r.at.Sub(start)
	}
	return out
}
