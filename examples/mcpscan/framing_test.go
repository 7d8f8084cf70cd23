package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
)

// A line from the agent that is no JSON-RPC message (garbage, a JSON value
// that is no request, a batch, a line over the bound) is answered with the
// JSON-RPC error the specification gives it, and the session goes on: the
// scan in flight and the calls after it are answered. With the SDK's stdio
// transport alone, the first such line ends the session, and the agent
// never hears of the calls it had in flight.
func TestALineThatIsNoMessageIsAnsweredAndTheSessionGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScanner(t)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() {
			err := serve(context.Background(), s, inR, outW, 4096)
			outW.Close()
			served <- err
		}()
		input := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"scan","arguments":{"provider":"aws","account":"123456789012"}}}`,
			`not json at all`,
			`{}`,
			`{"jsonrpc":"2.0","id":7,"method":5}`,
			`[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`,
			`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`,
			`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"rate_limit_status","arguments":{}}}`,
		}
		go func() {
			for _, l := range input {
				if _, err := io.WriteString(inW, l+"\n"); err != nil {
					return
				}
			}
		}()

		type answer struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		var got []string
		results := map[string]bool{}
		sc := bufio.NewScanner(outR)
		for len(results) < 3 && sc.Scan() {
			var a answer
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%s: %v", sc.Bytes(), err)
			}
			if a.Error != nil {
				got = append(got, string(a.ID)+" "+strconv.Itoa(a.Error.Code))
			} else {
				results[string(a.ID)] = true
			}
		}
		inW.Close()
		if err := <-served; err != nil && len(results) < 3 {
			t.Logf("serve: %v", err)
		}
		slices.Sort(got)
		want := []string{"7 -32600", "null -32600", "null -32600", "null -32600", "null -32700"}
		if !slices.Equal(got, want) || len(results) != 3 || !results["1"] || !results["2"] || !results["10"] {
			t.Fatalf("answered: errors %q, results %v; want errors %q and the results of 1, 2 (the scan) and 10", got, results, want)
		}
	})
}

// A line longer than the reader's buffer is read whole when it is within
// the bound, dropped to its end when it is over it, and the next line is
// read from its start either way; a last line without a newline is read.
func TestReadLineSpansBuffersAndDropsLongLines(t *testing.T) {
	in := strings.Repeat("a", 40) + "\n" + strings.Repeat("b", 60) + "\n" + strings.Repeat("c", 50) + "\nlast"
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	type got struct {
		line    string
		tooLong bool
		err     error
	}
	var all []got
	for {
		line, tooLong, err := readLine(r, 50)
		all = append(all, got{string(line), tooLong, err})
		if err != nil {
			break
		}
	}
	want := []got{{strings.Repeat("a", 40), false, nil}, {"", true, nil}, {strings.Repeat("c", 50), false, nil}, {"last", false, io.EOF}}
	if !slices.Equal(all, want) {
		t.Fatalf("read %v\nwant %v", all, want)
	}
}
