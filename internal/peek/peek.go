// Package peek reads the start of an error answer's body ahead, for what
// the server says in it (GitHub's secondary limit, a Google error's reason
// and RetryInfo), while the attempt that got the answer holds its slot:
// for a bounded time, and giving the body back whole to whoever reads it
// next.
package peek

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// Body reads up to limit bytes of resp's body in a goroutine of its own,
// and waits for that read for at most grace or until ctx ends. It returns
// what was read when the read ended by then (nil otherwise: a body that
// has not come decides nothing), and whether that is the body whole (it
// ended within limit, without error). resp.Body is replaced by a body
// that gives what was read and then the rest, its reads waiting for the
// read ahead to end, or, when the read ahead failed, what was read and
// then that error, at every read after (a body need not repeat its
// error, and the rest it would give after one is not the body's); closing
// it closes the body, which also ends a read ahead still waiting (as
// net/http's response bodies allow). A response without a body is left as
// it is.
func Body(ctx context.Context, resp *http.Response, limit int64, grace time.Duration) (b []byte, whole bool) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil, false
	}
	p := &peeked{body: resp.Body, done: make(chan struct{})}
	go func() {
		kept, err := io.ReadAll(io.LimitReader(p.body, limit+1))
		p.kept, p.err, p.whole = kept, err, err == nil && int64(len(kept)) <= limit
		close(p.done)
	}()
	resp.Body = p
	select {
	case <-p.done:
		return p.kept, p.whole
	default:
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.kept, p.whole
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}

// peeked is a body whose start a goroutine reads ahead (see Body).
type peeked struct {
	body  io.ReadCloser
	done  chan struct{} // closed once the read ahead has ended
	kept  []byte
	err   error // the read ahead's failure
	whole bool
	r     io.Reader // nil until the read ahead has ended
}

func (p *peeked) Read(b []byte) (int, error) {
	if p.r == nil {
		<-p.done
		var rest io.Reader = p.body
		if p.err != nil {
			rest = failed{p.err}
		}
		p.r = io.MultiReader(bytes.NewReader(p.kept), rest)
	}
	return p.r.Read(b)
}

// failed is a reader whose every read fails with err.
type failed struct{ err error }

func (f failed) Read([]byte) (int, error) { return 0, f.err }

func (p *peeked) Close() error { return p.body.Close() }
