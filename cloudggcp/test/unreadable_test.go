package test

import (
	"fmt"
	"testing"

	"github.com/cloudg/cloudg/internal/unreadabletest"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"

	_ "github.com/cloudg/cloudg/cloudggcp" // its error reader
)

// googleapi's *Error and gax's *apierror.APIError read their receiver in
// their methods, and cloudggcp's reader their fields: a nil one in a
// chain (an SDK bug's, or an application's that wraps one it did not set)
// must not crash the process in the classifier. Each reads as an
// unreadable error.
func TestNilGoogleErrorsAreUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"nil *googleapi.Error", (*googleapi.Error)(nil)},
		{"wrapped nil *googleapi.Error", fmt.Errorf("list: %w", (*googleapi.Error)(nil))},
		{"nil *apierror.APIError", (*apierror.APIError)(nil)},
		{"wrapped nil *apierror.APIError", fmt.Errorf("list: %w", (*apierror.APIError)(nil))},
	} {
		unreadabletest.Check(t, tc.name, tc.err)
	}
}
