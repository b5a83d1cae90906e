package upstream

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var resultSeeds = []string{
	`{"content":[{"type":"text","text":"hi"}]}`,
	`{"content":[{"type":"text","text":"a","_meta":{"k":[1,"x"]},"annotations":{"audience":["user"],"priority":0.5}},{"type":"text","text":"\u00e9\n"}],"isError":true}`,
	`{"content":[],"structuredContent":{"n":1.5,"s":"x","l":[null,true]},"_meta":{"progressToken":3}}`,
	`{"content":null}`,
	`{}`,
	`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
	`{"content":[{"type":"text","text":1}]}`,
	`{"content":[null]}`,
	`{"content":[{"type":"text","text":"x"}],"resultType":"input_required"}`,
	`{"content":[{"type":"text","text":"x"}],"inputRequests":{}}`,
	`{"content":[{"type":"text","text":"x","TEXT":"y","Type":"z"}]}`,
	`{"content":[{"type":"text","text":"x"}]} trailing`,
	`[1]`,
}

// TestDecodeTextResult: the decoder-free path reads what the SDK reads, and
// leaves to the SDK everything else.
func TestDecodeTextResult(t *testing.T) {
	fast := 0
	for _, raw := range resultSeeds {
		if checkTextResult(t, []byte(raw)) {
			fast++
		}
	}
	if fast != 6 {
		t.Fatalf("%d results decoded without the SDK, want 6", fast)
	}
}

// checkTextResult compares both decodings of raw; it reports whether the
// decoder-free path took it.
func checkTextResult(t *testing.T, raw []byte) bool {
	t.Helper()
	got := decodeTextResult(raw)
	if got == nil {
		return false
	}
	want := new(mcp.CallToolResult)
	if err := want.UnmarshalJSON(raw); err != nil {
		t.Fatalf("%s: decoded without the SDK, which refuses it: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %#v\nwant %#v", raw, got, want)
	}
	return true
}

func FuzzDecodeTextResult(f *testing.F) {
	for _, s := range resultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if checkDepth(raw) != nil {
			return // the line connection refuses it before
		}
		checkTextResult(t, raw)
	})
}

// FuzzAppendResponse: a result response written without the encoder is the
// encoder's bytes exactly, whatever the ID and the result.
func FuzzAppendResponse(f *testing.F) {
	f.Add(int64(1), "", `{"content":[{"type":"text","text":"hi"}]}`)
	f.Add(int64(-7), "abc", `{"a":"<&>"}`)
	f.Add(int64(0), "sb-1", `"x\u2028y"`)
	f.Add(int64(0), "é\"\\", `[1,2.5e3,null,true]`)
	f.Fuzz(func(t *testing.T, n int64, s, text string) {
		result, err := json.Marshal(map[string]any{"content": text, "n": n})
		if err != nil {
			t.Skip()
		}
		for _, raw := range []any{float64(n % (1 << 53)), s} {
			id, err := jsonrpc.MakeID(raw)
			if err != nil {
				t.Fatal(err)
			}
			r := &jsonrpc.Response{ID: id, Result: result}
			want, err := jsonrpc.EncodeMessage(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendResponse(nil, r); got != nil && string(got) != string(want) {
				t.Fatalf("appendResponse\n got %s\nwant %s", got, want)
			}
		}
	})
}
