package view

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestListToolsPages(t *testing.T) {
	st := &View{}
	for i := range PageSize + 5 {
		st.Listed = append(st.Listed, &mcp.Tool{Name: fmt.Sprintf("mcp_s_t%05d", i)})
	}
	first, err := st.ListTools(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != PageSize || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q", len(first.Tools), first.NextCursor)
	}
	if first.CacheScope != "public" {
		t.Errorf("cacheScope %q, want public as the SDK sends", first.CacheScope)
	}
	second, err := st.ListTools(&mcp.ListToolsParams{Cursor: first.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Tools) != 5 || second.NextCursor != "" || second.Tools[0] != st.Listed[PageSize] {
		t.Fatalf("second page: %d tools from %s, cursor %q", len(second.Tools), second.Tools[0].Name, second.NextCursor)
	}

	_, err = st.ListTools(&mcp.ListToolsParams{Cursor: "%%%"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("bad cursor: %v, want invalid params", err)
	}

	empty, err := (&View{}).ListTools(&mcp.ListToolsParams{})
	if err != nil || empty.Tools == nil || len(empty.Tools) != 0 {
		t.Errorf("empty view: %+v, %v; want an empty, non-nil list", empty, err)
	}
}
