package cloudggcp

import (
	"context"

	asset "cloud.google.com/go/asset/apiv1"
	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
)

// Status is a coverage record's status: a string, safe to share. The zero
// Status, "", is none of the statuses.
type Status string

// Coverage statuses.
const (
	StatusSuccess Status = "SUCCESS"
	StatusPartial Status = "PARTIAL"
	StatusFailed  Status = "FAILED"
)

// Coverage is the coverage record of one listing: what a collector reports
// for the task. It is a plain value, which several goroutines may read at
// once while none changes it; the zero Coverage names no listing and has
// no status.
type Coverage struct {
	Name    string `json:"name"` // the listing's scope, gcp/projects/p1/*/cloudasset/ListAssets
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"`
	Items   int    `json:"items"`
}

// NewCoverage returns the record of a listing named name that returned
// items and ended with err: SUCCESS without an error; PARTIAL, with the
// message "listing truncated: " and resilience.DescribeError(err) ("listing
// truncated: throttled: ..." for throttling), when items came back; FAILED,
// with DescribeError(err), when nothing did.
func NewCoverage(name string, items int, err error) Coverage {
	c := Coverage{Name: name, Status: StatusSuccess, Items: items}
	switch {
	case err == nil:
	case items > 0:
		c.Status, c.Message = StatusPartial, "listing truncated: "+resilience.DescribeError(err)
	default:
		c.Status, c.Message = StatusFailed, resilience.DescribeError(err)
	}
	return c
}

// Inventory is what ListInventory collected: the assets of ListAssets, or,
// when ListAssets was unavailable, the resources of SearchAllResources. It
// is a plain value, which several goroutines may read at once (its assets
// and resources too) while none changes it; the zero Inventory holds
// nothing.
type Inventory struct {
	Assets    []*assetpb.Asset
	Resources []*assetpb.ResourceSearchResult
	// Coverage is the record of the listing that produced the items.
	Coverage Coverage
	// Fallback is the ListAssets error (PermissionDenied, Unimplemented)
	// that made it search instead; nil when ListAssets was used.
	Fallback error
}

// ListInventory lists req.Parent's assets with a paced ListAssets listing
// and returns everything collected, with the error the listing ended with.
// When ListAssets is unavailable (PermissionDenied or Unimplemented before
// anything came back) it falls back to a paced SearchAllResources listing of
// the same parent, asset types and page size.
func ListInventory(ctx context.Context, client *asset.Client, req *assetpb.ListAssetsRequest, opts ...Option) (Inventory, error) {
	l := ListAssets(ctx, client, req, opts...)
	assets, err := l.Collect()
	inv := Inventory{Assets: assets, Coverage: l.Coverage()}
	if err == nil || len(assets) > 0 || !Unavailable(err) {
		return inv, err
	}
	s := SearchAllResources(ctx, client, &assetpb.SearchAllResourcesRequest{
		Scope:      req.GetParent(),
		AssetTypes: req.GetAssetTypes(),
		PageSize:   req.GetPageSize(),
	}, opts...)
	resources, serr := s.Collect()
	return Inventory{Resources: resources, Coverage: s.Coverage(), Fallback: err}, serr
}
