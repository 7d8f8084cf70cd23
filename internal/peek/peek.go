// Package peek reads the start of an answer's body ahead, for what the
// server says in it (GitHub's secondary limit, a Google error's reason
// and RetryInfo, GitHub's GraphQL 200 that a rate limit was hit), while
// the attempt that got the answer holds its slot: for a bounded time, no
// further than needed, and giving the body back whole to whoever reads
// it next.
package peek

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
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
	return Until(ctx, resp, limit, grace, nil)
}

// firstRead is the buffer of a read ahead's first read: what a body's
// first read gives when the answer came in one piece (its headers and
// the start of its body in one segment).
const firstRead = 512

// Until is Body, its read ahead ending also as soon as enough, called
// with all that was read after each read that gave bytes, reports that
// those bytes decide what the caller reads them for (a GraphQL answer
// whose first member is its data), so that the start of a long answer
// is read, and waited for, no further than it must be; whole is then
// false unless that read also ended the body. A nil enough reads on to
// limit or the body's end. The read ahead's first read takes at most 512
// bytes, the next ones what a growing buffer holds, up to limit and one
// more byte.
func Until(ctx context.Context, resp *http.Response, limit int64, grace time.Duration, enough func([]byte) bool) (b []byte, whole bool) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil, false
	}
	p := &peeked{body: resp.Body, done: make(chan struct{})}
	go func() {
		kept, err := readUntil(p.body, limit+1, enough)
		p.kept, p.err = kept, err
		p.whole = err == io.EOF && int64(len(kept)) <= limit
		if err == io.EOF {
			p.err = nil
		}
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

// readUntil reads r until it ends (io.EOF), fails, has given max bytes or
// enough reports that what was read suffices (a nil error then).
func readUntil(r io.Reader, max int64, enough func([]byte) bool) ([]byte, error) {
	b := make([]byte, 0, min(firstRead, max))
	for int64(len(b)) < max {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(int64(cap(b)), max-int64(len(b)))))
		}
		n, err := r.Read(b[len(b):int(min(int64(cap(b)), max))])
		b = b[:len(b)+n]
		if err != nil {
			return b, err
		}
		if n > 0 && enough != nil && enough(b) {
			return b, nil
		}
	}
	return b, nil
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
