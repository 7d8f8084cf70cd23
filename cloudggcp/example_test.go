package cloudggcp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	asset "cloud.google.com/go/asset/apiv1"
	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// inventory is an in-process Cloud Asset service with 25 assets, served
// 10 to a page; ListAssets is denied when denyList is set.
type inventory struct {
	assetpb.UnimplementedAssetServiceServer
	denyList bool
}

// page returns the names of the page at token and the next token.
func page(token string) (names []string, next string) {
	start, _ := strconv.Atoi(token)
	end := min(start+10, 25)
	for i := start; i < end; i++ {
		names = append(names, fmt.Sprintf("//compute.googleapis.com/projects/p1/zones/z/instances/vm%d", i))
	}
	if end < 25 {
		next = strconv.Itoa(end)
	}
	return names, next
}

func (s *inventory) ListAssets(_ context.Context, req *assetpb.ListAssetsRequest) (*assetpb.ListAssetsResponse, error) {
	if s.denyList {
		return nil, status.Error(codes.PermissionDenied, "cloudasset.assets.listResource denied")
	}
	names, next := page(req.GetPageToken())
	resp := &assetpb.ListAssetsResponse{NextPageToken: next}
	for _, n := range names {
		resp.Assets = append(resp.Assets, &assetpb.Asset{Name: n})
	}
	return resp, nil
}

func (s *inventory) SearchAllResources(_ context.Context, req *assetpb.SearchAllResourcesRequest) (*assetpb.SearchAllResourcesResponse, error) {
	names, next := page(req.GetPageToken())
	resp := &assetpb.SearchAllResourcesResponse{NextPageToken: next}
	for _, n := range names {
		resp.Results = append(resp.Results, &assetpb.ResourceSearchResult{Name: n})
	}
	return resp, nil
}

// serve starts srv in memory and returns a client for it, and a function
// that stops both.
func serve(srv assetpb.AssetServiceServer, opts ...option.ClientOption) (*asset.Client, func()) {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	assetpb.RegisterAssetServiceServer(gs, srv)
	go gs.Serve(lis)
	client, err := asset.NewClient(context.Background(), append([]option.ClientOption{
		option.WithEndpoint("passthrough:///bufconn"),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		})),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}, opts...)...)
	if err != nil {
		panic(err)
	}
	return client, func() { client.Close(); gs.Stop() }
}

// A paced ListAssets listing: each page takes a token of the ListAssets
// bucket (1.5 rps, burst 10) and counts one call of the project's Cloud
// Asset scope; the listing holds one slot of the project's bulkhead.
func Example() {
	client, stop := serve(&inventory{})
	defer stop()
	gov, _ := resilience.NewGovernor(resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())

	l := cloudggcp.ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, cloudggcp.WithGovernor(gov))
	assets, err := l.Collect()
	fmt.Println(len(assets), "assets in", l.Pages(), "pages:", err)
	fmt.Printf("%+v\n", l.Coverage())
	fmt.Println("calls:", gov.Summary(stats).Scopes["gcp/projects%2Fp1/*/cloudasset"].Calls)
	// Output:
	// 25 assets in 3 pages: <nil>
	// {Name:gcp/projects/p1/*/cloudasset/ListAssets Status:SUCCESS Message: Items:25}
	// calls: 3
}

// ListInventory searches when ListAssets is denied.
func ExampleListInventory() {
	client, stop := serve(&inventory{denyList: true})
	defer stop()
	gov, _ := resilience.NewGovernor(resilience.Config{})

	inv, err := cloudggcp.ListInventory(context.Background(), client,
		&assetpb.ListAssetsRequest{Parent: "projects/p1"}, cloudggcp.WithGovernor(gov))
	fmt.Println("ListAssets:", status.Code(inv.Fallback))
	fmt.Println(len(inv.Resources), "resources,", inv.Coverage.Status, "from", inv.Coverage.Name, err)
	// Output:
	// ListAssets: PermissionDenied
	// 25 resources, SUCCESS from gcp/projects/p1/*/cloudasset/SearchAllResources <nil>
}

// A scheduler asks how long a call would wait now (Governor.Delay on the
// scope MethodScope computes for the interceptor, changing nothing), and
// lets a call refuse to wait past a bound (resilience.WithMaxWait), so that
// it can requeue the task instead of holding its worker. Here the scope
// was paused for 30 s, as a throttled answer's RetryInfo would pause it.
func ExampleMethodScope() {
	gov, _ := resilience.NewGovernor(resilience.Config{})
	client, stop := serve(&inventory{}, cloudggcp.ClientOption(cloudggcp.WithGovernor(gov)))
	defer stop()
	req := &assetpb.GetFeedRequest{Name: "projects/p1/feeds/f1"}
	scope := cloudggcp.MethodScope("cloudasset.googleapis.com:443", "/google.cloud.asset.v1.AssetService/GetFeed", req)
	wait, why := gov.Delay(scope)
	fmt.Println(scope, wait, why)

	gd, _ := gov.Begin(context.Background(), scope)
	gd.Pause(30 * time.Second)
	gd.End(nil)
	wait, why = gov.Delay(scope)
	fmt.Println(wait.Round(time.Second), why)

	ctx := resilience.WithMaxWait(context.Background(), time.Second)
	_, err := client.GetFeed(ctx, req) // refused at once, nothing sent
	retryAfter, _ := resilience.RetryAfter(err)
	fmt.Println(resilience.Classify(err), retryAfter.Round(time.Second), errors.Is(err, resilience.ErrNoToken))
	// Output:
	// gcp/projects/p1/*/cloudasset/GetFeed 0s <nil>
	// 30s resilience: no rate token now
	// THROTTLED 30s true
}
