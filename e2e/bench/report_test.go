package main

import "testing"

// TestErrorQuotes: an error quotes the answer of an SSE stream by its last
// event's data, and a table cell holds it on one line with its pipes
// escaped, so that one error cannot break the report's table.
func TestErrorQuotes(t *testing.T) {
	sse := "id: a_0\nretry: 1000\ndata: \n\nid: a_1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":true}}\n\n"
	if got := string(lastData([]byte(sse))); got != `{"jsonrpc":"2.0","id":7,"result":{"isError":true}}` {
		t.Errorf("lastData(SSE) = %q", got)
	}
	if got := string(lastData([]byte(`{"id":1}`))); got != `{"id":1}` {
		t.Errorf("lastData(JSON) = %q", got)
	}
	if got := tableCell("a\nb|c\r\nd"); got != `a b\|c d` {
		t.Errorf("tableCell = %q", got)
	}
}
