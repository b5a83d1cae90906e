package dispatch

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzAppendTextResult: a text-only result, with structured content as a
// decoder makes it or without, written by hand is MarshalJSON's bytes
// exactly, but for <, > and &, which it writes as themselves (typed: as
// the session would finish it for a 2026-07-28 client); anything else is
// left to MarshalJSON.
func FuzzAppendTextResult(f *testing.F) {
	f.Add("hi", "", false, false, false, []byte(nil), false)
	f.Add("hi", "", false, false, true, []byte(nil), false)
	f.Add("<a & b>\n\t\"q\" \\ \u2028 \u2029 \x7f \x00 \xff é 😀", "second", true, false, true, []byte(nil), false)
	f.Add("", "", false, true, false, []byte(nil), false)
	f.Add("{\"text\":\"hi\"}", "", false, false, false, []byte(`{"text":"hi","n":[1,-0,1.5e-7,1e21,12345678901234567890,null,true,{}],"<&>":"\u2028"}`), false)
	f.Add("x", "", true, false, true, []byte(`[0.1,"a",{"b":{"c":[]}}]`), true)
	f.Add("x", "", false, false, false, []byte(`"just a string"`), false)
	f.Fuzz(func(t *testing.T, a, b string, isError, meta, typed bool, structured []byte, useNumber bool) {
		r := &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: a}}}
		if b != "" {
			r.Content = append(r.Content, &mcp.TextContent{Text: b})
		}
		if meta {
			r.Content = append(r.Content, &mcp.TextContent{Text: b, Meta: mcp.Meta{"k": a}})
		}
		if json.Valid(structured) {
			// As a decoder makes it: numbers as float64, or json.Number.
			dec := json.NewDecoder(bytes.NewReader(structured))
			if useNumber {
				dec.UseNumber()
			}
			if err := dec.Decode(&r.StructuredContent); err != nil {
				if !useNumber {
					// Valid JSON a float64 cannot hold (1e1000): such
					// a decoder refuses the whole result, so it never
					// reaches the writer.
					t.Skip(err)
				}
				t.Fatal(err)
			}
		}
		var server json.RawMessage
		want, err := r.MarshalJSON()
		if typed {
			// As the session finishes a 2026-07-28 answer: _meta names
			// the server, and resultType goes first.
			info := &mcp.Implementation{Name: "switchboard", Version: a}
			server, _ = json.Marshal(info)
			server = htmlUnescaped(server) // copied as it is given
			cp := *r
			cp.Meta = mcp.Meta{mcp.MetaKeyServerInfo: info}
			want, err = cp.MarshalJSON()
			want = append([]byte(`{"resultType":"complete",`), want[1:]...)
		}
		if err != nil {
			t.Fatal(err)
		}
		got := appendTextResult(nil, r, server)
		if meta {
			if got != nil {
				t.Fatalf("content with _meta written by hand: %s", got)
			}
			return
		}
		if want = htmlUnescaped(want); string(got) != string(want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// htmlUnescaped is json.Marshal's output as an Encoder after
// SetEscapeHTML(false) writes it: its escapes of <, > and & as the
// characters. In JSON a backslash always begins an escape, so an escape is
// read whole, and an escaped backslash is never taken for the start of one.
func htmlUnescaped(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out = append(out, '<')
			case "003e":
				out = append(out, '>')
			case "0026":
				out = append(out, '&')
			default:
				out = append(out, b[i:i+6]...)
			}
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

// TestHTMLUnescaped: the fuzz target's reference reads escapes whole.
func TestHTMLUnescaped(t *testing.T) {
	for in, want := range map[string]string{
		`"\u003ca\u0026b\u003e"`: `"<a&b>"`,
		`"\\u003c"`:              `"\\u003c"`, // a backslash, then u003c
		`"\\\u003c \u2028 \n"`:   `"\\< \u2028 \n"`,
		`"\u00e9\"\u003e"`:       `"\u00e9\">"`,
	} {
		if got := string(htmlUnescaped([]byte(in))); got != want {
			t.Errorf("htmlUnescaped(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestAppendTextResultLeaves: what the hand-written path leaves to
// MarshalJSON.
func TestAppendTextResultLeaves(t *testing.T) {
	text := []mcp.Content{&mcp.TextContent{Text: "x"}}
	for name, r := range map[string]*mcp.CallToolResult{
		"no content":                     {},
		"structured content of Go types": {Content: text, StructuredContent: map[string]any{"a": 1}},
		"structured NaN":                 {Content: text, StructuredContent: []any{math.NaN()}},
		"a request state":                {Content: text, RequestState: "s"},
		"result _meta":                   {Content: text, Meta: mcp.Meta{"k": "v"}},
		"annotations":                    {Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		"an image":                       {Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
	} {
		if got := appendTextResult(nil, r, json.RawMessage(`{"name":"switchboard"}`)); got != nil {
			t.Errorf("%s: written by hand: %s", name, got)
		}
	}
}

// FuzzAppendArgs: arguments as decodeArgs reads them are written back as
// an Encoder after SetEscapeHTML(false) writes them, byte for byte.
func FuzzAppendArgs(f *testing.F) {
	for _, s := range argsSamples {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"html":"<a href='x'>&amp;</a>","z":{"b":[1,"\u2028",{}],"a":-0},"":null,"m":"a\u0000b"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := decodeArgs(raw)
		if err != nil {
			return
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(args); err != nil {
			t.Fatal(err)
		}
		got, err := appendArgs(nil, args)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
			t.Fatalf("%q:\n got %s\nwant %s", raw, got, w)
		}
	})
}

// TestAppendFloat: a float64 is written as encoding/json writes it.
func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-6, 9.999999e-7, 1e-7, 1.5e-9, 1e20, 1e21, -1e21,
		123456789e-20, 5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64, 12345678901234567890, 1e100} {
		t.Run(strconv.FormatFloat(f, 'g', -1, 64), func(t *testing.T) {
			want, _ := json.Marshal(f)
			got, ok := appendFloat(nil, f)
			if !ok || string(got) != string(want) {
				t.Errorf("%s (%v); encoding/json writes %s", got, ok, want)
			}
		})
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, ok := appendFloat(nil, f); ok {
			t.Errorf("%v written as %s", f, got)
		}
	}
}

// TestAppendArgsNumbers: a json.Number is written only when it is one
// number, as encoding/json refuses it otherwise; a value decodeArgs never
// returns is left to json.Marshal.
func TestAppendArgsNumbers(t *testing.T) {
	for _, n := range []json.Number{"1 ", " 1", "true", "1e", "--1", "0x10", `"1"`} {
		t.Run("refused "+string(n), func(t *testing.T) {
			if got, err := appendArgs(nil, n); err == nil {
				t.Errorf("written as %s", got)
			}
			if _, err := json.Marshal(n); err == nil {
				t.Error("encoding/json writes it")
			}
		})
	}
	for _, n := range []json.Number{"0", "-0", "1.5e-3", "12345678901234567890", ""} {
		t.Run("written "+string(n), func(t *testing.T) {
			got, err := appendArgs(nil, n)
			want, _ := json.Marshal(n)
			if err != nil || string(got) != string(want) {
				t.Errorf("%s, %v; encoding/json writes %s", got, err, want)
			}
		})
	}
	t.Run("other values", func(t *testing.T) {
		got, err := appendArgs(nil, map[string]any{"f": 1.5, "i": 2})
		if err != nil || string(got) != `{"f":1.5,"i":2}` {
			t.Errorf("%s, %v", got, err)
		}
	})
}
