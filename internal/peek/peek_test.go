package peek

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// chunks is a body that gives one chunk a read, then io.EOF or err.
type chunks struct {
	parts []string
	err   error
	reads int
}

func (c *chunks) Read(p []byte) (int, error) {
	c.reads++
	if len(c.parts) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	if c.parts[0] = c.parts[0][n:]; c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func (c *chunks) Close() error { return nil }

// Until reads a body ahead to its end within the limit (whole), or to the
// limit and one byte more (not whole), or only until enough says that
// what was read suffices (not whole, the read stopped there); whatever it
// read, the caller reads the body as it came, and a read ahead that
// failed gives the caller what came, then its error.
func TestUntil(t *testing.T) {
	lost := errors.New("connection lost")
	for _, c := range []struct {
		name      string
		parts     []string
		err       error
		limit     int64
		enough    func([]byte) bool
		wantKept  string
		wantWhole bool
		wantRead  string
		wantErr   error
	}{
		{"whole at the limit", []string{"ab", "c"}, nil, 3, nil, "abc", true, "abc", nil},
		{"past the limit", []string{"ab", "cd", "ef"}, nil, 3, nil, "abcd", false, "abcdef", nil},
		{"enough at the first chunk", []string{"ab", "cd"}, nil, 100, func(b []byte) bool { return len(b) >= 2 }, "ab", false, "abcd", nil},
		{"never enough", []string{"ab", "cd"}, nil, 100, func([]byte) bool { return false }, "abcd", true, "abcd", nil},
		{"failed", []string{"ab"}, lost, 100, nil, "ab", false, "ab", lost},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := &chunks{parts: append([]string(nil), c.parts...), err: c.err}
			resp := &http.Response{Body: body}
			kept, whole := Until(context.Background(), resp, c.limit, time.Second, c.enough)
			if string(kept) != c.wantKept || whole != c.wantWhole {
				t.Errorf("read ahead %q (whole %v), want %q (whole %v)", kept, whole, c.wantKept, c.wantWhole)
			}
			got, err := io.ReadAll(resp.Body)
			if string(got) != c.wantRead || !errors.Is(err, c.wantErr) {
				t.Errorf("the caller read %q and %v, want %q and %v", got, err, c.wantRead, c.wantErr)
			}
		})
	}
}
