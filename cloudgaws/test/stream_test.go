package test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// A streamed answer (S3 GetObject's Body) is read after the call returns,
// on the request's context: the call's end must not cancel it, after a
// retry as after a first attempt. Over loopback TCP, since the transport
// is what stops reading a body whose request's context is done.
func TestStreamedBodyOutlivesTheCallAfterARetry(t *testing.T) {
	const size = 4 << 20
	chunk := strings.Repeat("x", 64<<10)
	for _, throttled := range []int{0, 1} {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if int(n.Add(1)) <= throttled {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(503)
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
				return
			}
			w.Header().Set("Content-Length", "4194304")
			w.WriteHeader(200)
			for written := 0; written < size; written += len(chunk) {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}))
		defer srv.Close()
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := awsConfig(nil, srv)
		if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithBaseRetryer(quickRetryer)); err != nil {
			t.Fatal(err)
		}
		client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
		out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bucket"), Key: aws.String("key")})
		if err != nil {
			t.Fatalf("throttled %d: GetObject: %v", throttled, err)
		}
		got, err := io.Copy(io.Discard, out.Body)
		out.Body.Close()
		if err != nil || got != size || int(n.Load()) != throttled+1 {
			t.Fatalf("throttled %d: read %d bytes of %d after the call returned: %v (%d requests)", throttled, got, size, err, n.Load())
		}
	}
}
