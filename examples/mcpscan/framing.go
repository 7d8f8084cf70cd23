package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine is the longest line the server reads as one message: the SDK's
// own bound of a frame.
const maxLine = mcp.DefaultMaxLineLength

// lineTransport returns the server's transport over in and out:
// newline-delimited JSON-RPC, as mcp.StdioTransport speaks it, except that a
// line that is no JSON-RPC message does not end the session. The SDK's
// stdio transport stops reading at the first line it cannot decode (a line
// of garbage, a JSON value that is no message, a batch under a protocol
// version without batches, a line over its length bound), and the session
// then ends with its calls in flight unanswered. Here each such line is
// answered with the JSON-RPC error the specification gives it (-32700 for
// a line that is no JSON, -32600 for one that is no request, with its id
// when it has one) and the session goes on. Batches are answered -32600:
// MCP dropped them in 2025-06-18, and the SDK ends a session of that
// version on one. max bounds a line (0: maxLine).
func lineTransport(in io.Reader, out io.Writer, max int) mcp.Transport {
	if max <= 0 {
		max = maxLine
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go filterLines(in, pw, w, max)
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// lockedWriter writes each message whole: the SDK writes a message with one
// Write, and so does filterLines with its answers, on the same output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// filterLines copies the lines of in that are JSON-RPC messages to pw, and
// answers the others on out. It closes pw when in ends (the session then
// ends as the SDK's would at the end of its input) or fails, and returns
// when in does or the session's end closed the pipe.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer, max int) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r, max)
		if tooLong {
			if aerr := answer(out, nil, jsonrpc.CodeInvalidRequest, "invalid request: a line over the bound of a message"); aerr != nil {
				pw.CloseWithError(aerr)
				return
			}
		} else if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if code, id, msg := check(trimmed); code != 0 {
				if aerr := answer(out, id, code, msg); aerr != nil {
					pw.CloseWithError(aerr)
					return
				}
			} else if _, werr := pw.Write(append(trimmed, '\n')); werr != nil {
				return // the session ended
			}
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine reads a line of r without its newline, of at most max bytes;
// a longer one is read to its end and dropped, tooLong set.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		var chunk []byte
		chunk, err = r.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(bytes.TrimSuffix(line, []byte("\n"))) > max {
				tooLong, line = true, nil
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
		}
	}
}

// check reports what is wrong with a line: 0 when it is a JSON-RPC message,
// else the error's code, the id of the request it answers (nil: null) and
// its message.
func check(line []byte) (code int, id json.RawMessage, msg string) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, nil, "parse error: a line that is no JSON"
	}
	if line[0] == '[' {
		return jsonrpc.CodeInvalidRequest, nil, "invalid request: batches are not taken; send each message on a line of its own"
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 && (m.ID[0] == '"' || m.ID[0] == '-' || (m.ID[0] >= '0' && m.ID[0] <= '9')) {
			id = m.ID
		}
		return jsonrpc.CodeInvalidRequest, id, "invalid request: " + err.Error()
	}
	return 0, nil, ""
}

// answer writes a JSON-RPC error response to out, in one Write.
func answer(out io.Writer, id json.RawMessage, code int, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: msg}})
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}
