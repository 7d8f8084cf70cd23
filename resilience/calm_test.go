package resilience

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
)

// h2Err is an error of HTTP/2 as net/http's bundled http2 and grpc-go
// give it: nothing but its text, their types being unexported.
type h2Err string

func (e h2Err) Error() string { return string(e) }

// HTTP/2's ENHANCE_YOUR_CALM (error code 0xb, RFC 9113 section 7: "the
// endpoint detected that its peer is exhibiting a behavior that might be
// generating excessive load") in an RST_STREAM or a GOAWAY is the server
// refusing the client's rate: a throttle, also for the strict
// classification (it is the protocol's error code, not a phrase), but not
// a provider's answer. A GOAWAY of ENHANCE_YOUR_CALM for too_many_pings
// is the client's keepalive, not its rate: the connection is lost, and the
// call may go again on a new one, transient (strictly too), as cloudghttp
// and cloudggcp read it, and no provider's answer.
func TestEnhanceYourCalmIsAThrottle(t *testing.T) {
	wrap := func(e error) error {
		return &url.Error{Op: "Get", URL: "https://compute.googleapis.com/compute/v1/projects/p1", Err: e}
	}
	for _, err := range []error{
		wrap(h2Err("stream error: stream ID 3; ENHANCE_YOUR_CALM; received from peer")),
		wrap(h2Err(`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=ENHANCE_YOUR_CALM, debug="rate"`)),
		wrap(h2Err(`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=ENHANCE_YOUR_CALM, debug=""`)),
		fmt.Errorf("rpc error: %w", h2Err(`code = Unavailable desc = closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: ENHANCE_YOUR_CALM`)),
		h2Err("stream terminated by RST_STREAM with error code: ENHANCE_YOUR_CALM"),
	} {
		if k := Classify(err); k != Throttled {
			t.Errorf("%v: %v, want THROTTLED", err, k)
		}
		if k, ok := ClassifyStrict(err); !ok || k != Throttled {
			t.Errorf("strict: %v: %v, %v, want THROTTLED", err, k, ok)
		}
		if IsProviderAnswer(err) {
			t.Errorf("%v: a provider's answer, want none", err)
		}
	}
	for _, err := range []error{
		wrap(h2Err(`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=ENHANCE_YOUR_CALM, debug="too_many_pings"`)),
		h2Err(`code = Unavailable desc = closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: ENHANCE_YOUR_CALM, debug data: "too_many_pings"`),
	} {
		if k := Classify(err); k != Transient {
			t.Errorf("%v: %v, want TRANSIENT", err, k)
		}
		if k, ok := ClassifyStrict(err); !ok || k != Transient {
			t.Errorf("strict: %v: %v, %v, want TRANSIENT", err, k, ok)
		}
		if IsProviderAnswer(err) {
			t.Errorf("%v: a provider's answer, want none", err)
		}
	}
	for _, err := range []error{
		wrap(h2Err("stream error: stream ID 3; INTERNAL_ERROR; received from peer")),
		errors.New("enhance your calm"),
	} {
		if k := Classify(err); k == Throttled {
			t.Errorf("%v: THROTTLED, want no throttle", err)
		}
	}
}
