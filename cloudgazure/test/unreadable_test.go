package test

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/cloudg/cloudg/internal/unreadabletest"

	_ "github.com/cloudg/cloudg/cloudgazure" // its error reader
)

// azcore's *ResponseError reads its receiver in its methods, and
// cloudgazure's reader its fields: a nil one in a chain (an SDK bug's, or
// an application's that wraps one it did not set) must not crash the
// process in the classifier. It reads as an unreadable error.
func TestANilResponseErrorIsUnreadable(t *testing.T) {
	var nilResp *azcore.ResponseError
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"nil *azcore.ResponseError", nilResp},
		{"wrapped nil *azcore.ResponseError", fmt.Errorf("list: %w", nilResp)},
	} {
		unreadabletest.Check(t, tc.name, tc.err)
	}
}
