package upstream

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/mcp-switchboard/switchboard/upstream/wire"
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
		if _, _, err := wire.Decode(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"result":%s}`, raw)); err != nil {
			return // the line connection refuses it before
		}
		checkTextResult(t, raw)
	})
}
