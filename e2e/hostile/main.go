// Command hostile is a scripted MCP server over stdio for switchboard's
// security tests. It speaks newline-delimited JSON-RPC itself, without an
// SDK, and answers each request from a JSON script byte for byte, so a test
// can put any payload in any field of any message: names, titles, schemas,
// results, errors, notifications and requests to the client.
//
//	hostile --script FILE [--stderr-file FILE]
//
// The script:
//
//	{
//	  "initialize": {...},          // the initialize result (default: every capability)
//	  "answers": [
//	    {"method": "tools/call",    // the request's method
//	     "name": "x",               // optional: params.name, params.uri or params.ref's name/uri
//	     "before": [{...}, ...],    // messages sent first (notifications, requests)
//	     "result": {...}}           // or "error": {...}
//	  ]
//	}
//
// The first answer that matches is used. In "before", the string
// "$progressToken" stands for the request's progress token. ping is
// answered with {}; other unmatched requests get -32601. Notifications and
// responses from the client are read and ignored.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

type answer struct {
	Method string            `json:"method"`
	Name   string            `json:"name,omitempty"`
	Before []json.RawMessage `json:"before,omitempty"`
	Result json.RawMessage   `json:"result,omitempty"`
	Error  json.RawMessage   `json:"error,omitempty"`
	// RawResult is the result's bytes, base64: for what JSON cannot
	// carry in a script (invalid UTF-8).
	RawResult []byte `json:"rawResult,omitempty"`
}

type script struct {
	Initialize json.RawMessage `json:"initialize,omitempty"`
	Answers    []answer        `json:"answers"`
}

type request struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
		Ref  struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

func main() {
	path := flag.String("script", "", "the script `file`")
	stderr := flag.String("stderr-file", "", "write this `file` to stderr at start")
	flag.Parse()
	if *stderr != "" {
		b, err := os.ReadFile(*stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile:", err)
			os.Exit(2)
		}
		os.Stderr.Write(b)
	}
	b, err := os.ReadFile(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(2)
	}
	var s script
	if err := json.Unmarshal(b, &s); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: script:", err)
		os.Exit(2)
	}
	if err := serve(&s); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

func serve(s *script) error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var r request
		if json.Unmarshal(in.Bytes(), &r) != nil || r.Method == "" || len(r.ID) == 0 {
			continue // a notification, a response or garbage
		}
		for _, m := range reply(s, &r) {
			out.Write(m)
			out.WriteByte('\n')
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return in.Err()
}

// reply is every message a request gets, its response last.
func reply(s *script, r *request) [][]byte {
	if r.Method == "initialize" {
		res := s.Initialize
		if res == nil {
			res = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true},"logging":{},"completions":{}},"serverInfo":{"name":"hostile","version":"1"}}`)
		}
		return [][]byte{response(r.ID, "result", res)}
	}
	for _, a := range s.Answers {
		if a.Method != r.Method || (a.Name != "" && a.Name != r.Params.Name && a.Name != r.Params.URI && a.Name != r.Params.Ref.Name && a.Name != r.Params.Ref.URI) {
			continue
		}
		var msgs [][]byte
		tok := r.Params.Meta.ProgressToken
		for _, m := range a.Before {
			if len(tok) > 0 {
				m = bytes.ReplaceAll(m, []byte(`"$progressToken"`), tok)
			}
			msgs = append(msgs, compact(m))
		}
		if a.Error != nil {
			return append(msgs, response(r.ID, "error", a.Error))
		}
		if a.RawResult != nil {
			return append(msgs, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, r.ID, a.RawResult)))
		}
		if a.Result == nil {
			a.Result = json.RawMessage(`{}`)
		}
		return append(msgs, response(r.ID, "result", a.Result))
	}
	if r.Method == "ping" {
		return [][]byte{response(r.ID, "result", json.RawMessage(`{}`))}
	}
	return [][]byte{response(r.ID, "error", json.RawMessage(fmt.Sprintf(`{"code":-32601,"message":"hostile: no answer for %s"}`, r.Method)))}
}

func response(id json.RawMessage, field string, v json.RawMessage) []byte {
	return compact([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%q:%s}`, id, field, v)))
}

// compact keeps one message on one line.
func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}
