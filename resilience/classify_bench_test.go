package resilience

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// The classifier's cost per error shape: an error none of the rules
// reads (a local error, searched for throttling phrases), a status on no
// list, an error code, a network error inside a *url.Error, and an HTTP/2
// ENHANCE_YOUR_CALM.
func BenchmarkClassify(b *testing.B) {
	u := func(e error) error {
		return &url.Error{Op: "Get", URL: "https://compute.googleapis.com/compute/v1/projects/p1/zones/z/instances", Err: e}
	}
	for _, bc := range []struct {
		name string
		err  error
	}{
		{"plain", fmt.Errorf("list instances: %w", errors.New("decode: unexpected end of JSON input"))},
		{"status404", fmt.Errorf("get: %w", statusErr(404))},
		{"code", fmt.Errorf("call: %w", codeErr{"Throttling", "Rate exceeded"})},
		{"reset", u(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})},
		{"calm", u(h2Err("stream error: stream ID 3; ENHANCE_YOUR_CALM; received from peer"))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(bc.err)
			}
		})
		b.Run(bc.name+"/strict", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ClassifyStrict(bc.err)
			}
		})
	}
}
