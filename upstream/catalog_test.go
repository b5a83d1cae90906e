package upstream_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/upstream"
)

// The tests in this file pin issue 23: a server whose prompts or resources
// cannot be listed still serves its tools. They run in synctest bubbles
// (supervise_test.go), so the retry schedule is checked exactly.

// refused is what @modelcontextprotocol/server-postgres answers
// resources/list with while its database is down.
var refused = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "connect ECONNREFUSED 127.0.0.1:5432"}

// listFaults makes chosen list methods of a fake upstream fail or hang,
// and records when each list method was asked for.
type listFaults struct {
	mu    sync.Mutex
	fail  map[string]error // method → the error it answers
	hang  map[string]bool  // method → never answers (until cancelled)
	asked map[string][]time.Time
}

// withCatalog gives the fake a prompt, a resource and a resource template,
// and puts listFaults in front of its lists. It must run before the first
// connection.
func withCatalog(f *fakeUpstream) *listFaults {
	lf := &listFaults{fail: map[string]error{}, hang: map[string]bool{}, asked: map[string][]time.Time{}}
	f.server.AddPrompt(&mcp.Prompt{Name: "greet"}, noPrompt)
	f.server.AddResource(&mcp.Resource{URI: "fake://hello", Name: "hello"}, readNothing)
	f.server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fake://items/{id}", Name: "item"}, readNothing)
	f.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !strings.HasSuffix(method, "/list") {
				return next(ctx, method, req)
			}
			lf.mu.Lock()
			lf.asked[method] = append(lf.asked[method], time.Now())
			err, hang := lf.fail[method], lf.hang[method]
			lf.mu.Unlock()
			if hang {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			if err != nil {
				return nil, err
			}
			return next(ctx, method, req)
		}
	})
	return lf
}

func noPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{}, nil
}

// addTool adds a tool to the fake, which tells its clients
// notifications/tools/list_changed.
func addTool(f *fakeUpstream, name string) {
	f.server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

func readNothing(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
}

func (lf *listFaults) set(method string, err error) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if err == nil {
		delete(lf.fail, method)
		return
	}
	lf.fail[method] = err
}

func (lf *listFaults) times(method string) []time.Time {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return append([]time.Time(nil), lf.asked[method]...)
}

// catalogHandle starts a Handle on the fake, counting OnChange calls, and
// returns it with its log.
func catalogHandle(t *testing.T, spec upstream.Spec, changes *atomic.Int32) (*upstream.Handle, *logBuffer) {
	log, buf := testLogger(t)
	h := upstream.New(spec, upstream.Options{Logger: log, OnChange: func(*upstream.Handle) { changes.Add(1) }})
	h.Start()
	return h, buf
}

// TestPartialCatalogServesTools: failing resources/list and prompts/list
// leave the catalog partial, but the start succeeds, the tools are listed
// and called, and the process is not restarted.
func TestPartialCatalogServesTools(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		lf := withCatalog(f)
		lf.set(upstream.ListResources, refused)
		lf.set(upstream.ListPrompts, errors.New("prompts are down"))
		var changes atomic.Int32
		h, log := catalogHandle(t, fakeSpec("pg"), &changes)
		defer h.Close(context.Background())
		synctest.Wait()

		st := h.Status()
		if st.State != upstream.StateReady || st.Restarts != 0 || len(f.attemptTimes()) != 1 {
			t.Fatalf("a failing resources/list failed the start: %+v", st)
		}
		if st.Catalog != upstream.CatalogPartial || st.Tools == 0 {
			t.Errorf("catalog %q with %d tools, want partial with the tools", st.Catalog, st.Tools)
		}
		want := map[string]string{upstream.ListResources: refused.Message, upstream.ListPrompts: "prompts are down"}
		if len(st.CatalogErrors) != len(want) {
			t.Errorf("catalog errors %v, want %v", st.CatalogErrors, want)
		}
		for m, msg := range want {
			if st.CatalogErrors[m] != msg {
				t.Errorf("catalog error of %s: %q, want the upstream's message %q", m, st.CatalogErrors[m], msg)
			}
			if st.ListFailures[m] != 1 {
				t.Errorf("%s failures counted %d, want 1", m, st.ListFailures[m])
			}
		}
		if got := time.Until(st.CatalogRetry); got < 4500*time.Millisecond || got > 5500*time.Millisecond {
			t.Errorf("failing lists retried in %s, want 5s ±10%%", got)
		}
		cat := h.Catalog()
		if len(cat.Resources) != 0 || len(cat.Prompts) != 0 || len(cat.Templates) != 1 {
			t.Errorf("catalog %d resources, %d prompts, %d templates; want 0, 0, 1", len(cat.Resources), len(cat.Prompts), len(cat.Templates))
		}
		for _, w := range []string{
			`upstream list failed: method=prompts/list error="prompts are down" attempt=1`,
			`upstream list failed: method=resources/list error="connect ECONNREFUSED 127.0.0.1:5432" attempt=1`,
		} {
			if n := strings.Count(log.String(), w); n != 1 {
				t.Errorf("log has %d lines %q, want 1:\n%s", n, w, log.String())
			}
		}
		if res, err := call(h, context.Background(), "echo"); err != nil || res.IsError {
			t.Errorf("call on a partial catalog: %v %v", res, err)
		}
	})
}

// TestPartialCatalogRetriesOnBackoff: the failing list alone is asked for
// again after 5 s, doubling to 5 min; once it answers, the catalog is
// complete, OnChange tells the proxy, and the retries stop.
func TestPartialCatalogRetriesOnBackoff(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		lf := withCatalog(f)
		lf.set(upstream.ListPrompts, refused)
		var changes atomic.Int32
		h, log := catalogHandle(t, fakeSpec("slowdb"), &changes)
		defer h.Close(context.Background())
		// The 9th listing is due after 915 s ±10 % (at most 16m47s), the
		// 10th no earlier than 18m13s.
		time.Sleep(17 * time.Minute)
		synctest.Wait()

		at := lf.times(upstream.ListPrompts)
		want := []time.Duration{5, 10, 20, 40, 80, 160, 300, 300}
		if len(at) != len(want)+1 {
			t.Fatalf("prompts/list asked %d times in 17 minutes, want %d", len(at), len(want)+1)
		}
		for i, w := range want {
			within(t, "delay before prompts/list retry "+string(rune('1'+i)), at[i+1].Sub(at[i]), w*time.Second)
		}
		if n := len(lf.times(upstream.ListTools)); n != 1 {
			t.Errorf("tools/list asked %d times, want once: only the failing list is retried", n)
		}
		st := h.Status()
		if st.Catalog != upstream.CatalogPartial || st.ListFailures[upstream.ListPrompts] != len(at) || st.Restarts != 0 {
			t.Errorf("after the failed retries: %+v", st)
		}
		if n := strings.Count(log.String(), "upstream list failed: method=prompts/list"); n != len(at) {
			t.Errorf("%d lines for %d failed listings", n, len(at))
		}
		warned := 0
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, "[WARN]") && strings.Contains(line, "upstream list failed: method=prompts/list") {
				warned++
			}
		}
		if warned != 1 {
			t.Errorf("%d WARN lines for a list failing %d times the same way, want 1 (the retries at DEBUG)", warned, len(at))
		}

		lf.set(upstream.ListPrompts, nil)
		before := changes.Load()
		time.Sleep(time.Until(st.CatalogRetry) + time.Millisecond)
		synctest.Wait()
		st = h.Status()
		if st.Catalog != upstream.CatalogComplete || st.CatalogErrors != nil || !st.CatalogRetry.IsZero() {
			t.Fatalf("after a good retry: %+v", st)
		}
		if got := h.Catalog(); len(got.Prompts) != 1 || len(got.Resources) != 1 || got.Errors != nil {
			t.Errorf("complete catalog %+v", got)
		}
		if changes.Load() == before {
			t.Error("a completed catalog was not reported through OnChange")
		}
		if !strings.Contains(log.String(), "upstream catalog complete") {
			t.Error("no log line for the completed catalog")
		}
		n := len(lf.times(upstream.ListPrompts))
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := len(lf.times(upstream.ListPrompts)); got != n {
			t.Errorf("prompts/list asked %d more times after it succeeded", got-n)
		}
	})
}

// TestPartialCatalogRetriesOnListChanged: the server's list_changed
// re-lists at once, before the backoff, and completes the catalog.
func TestPartialCatalogRetriesOnListChanged(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		lf := withCatalog(f)
		lf.set(upstream.ListResources, refused)
		var changes atomic.Int32
		h, _ := catalogHandle(t, fakeSpec("pg"), &changes)
		defer h.Close(context.Background())
		synctest.Wait()
		if h.Status().Catalog != upstream.CatalogPartial {
			t.Fatalf("not partial: %+v", h.Status())
		}
		time.Sleep(time.Second)
		lf.set(upstream.ListResources, nil)
		f.server.AddResource(&mcp.Resource{URI: "fake://later", Name: "later"}, readNothing) // notifications/resources/list_changed
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		st := h.Status()
		if st.Catalog != upstream.CatalogComplete || st.Resources != 2 || !st.CatalogRetry.IsZero() {
			t.Fatalf("after list_changed: %+v", st)
		}
		if n := len(lf.times(upstream.ListResources)); n != 2 {
			t.Errorf("resources/list asked %d times, want 2", n)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := len(lf.times(upstream.ListResources)); n != 2 {
			t.Errorf("resources/list asked %d times after the catalog was complete, want 2", n)
		}
		if st := h.Status(); st.Restarts != 0 || len(f.attemptTimes()) != 1 {
			t.Errorf("restarted: %+v", st)
		}
	})
}

// TestRelistKeepsItemsOfAFailingList: a list that fails on a re-list keeps
// what it listed before, while the lists that answer are updated.
func TestRelistKeepsItemsOfAFailingList(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		lf := withCatalog(f)
		var changes atomic.Int32
		h, _ := catalogHandle(t, fakeSpec("flap"), &changes)
		defer h.Close(context.Background())
		synctest.Wait()
		before := h.Catalog()
		if h.Status().Catalog != upstream.CatalogComplete || len(before.Prompts) != 1 {
			t.Fatalf("start: %+v", h.Status())
		}
		lf.set(upstream.ListPrompts, refused)
		addTool(f, "added")
		f.server.AddPrompt(&mcp.Prompt{Name: "added"}, noPrompt) // prompts/list is asked again, and fails
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		after := h.Catalog()
		if len(after.Tools) != len(before.Tools)+1 {
			t.Errorf("%d tools after list_changed, want %d", len(after.Tools), len(before.Tools)+1)
		}
		if len(after.Prompts) != 1 || after.Errors[upstream.ListPrompts] != refused.Message {
			t.Errorf("failing prompts/list: prompts %v, errors %v; want the old prompt kept and the error", after.Prompts, after.Errors)
		}
	})
}

// TestListChangedRelistsThatList: a list_changed has the list it names
// asked for again (the resources with their templates), not the others;
// notifications that come together cost one listing.
func TestListChangedRelistsThatList(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		lf := withCatalog(f)
		var changes atomic.Int32
		h, _ := catalogHandle(t, fakeSpec("busy"), &changes)
		defer h.Close(context.Background())
		synctest.Wait()
		tools := len(h.Catalog().Tools)
		asked := func() map[string]int {
			n := map[string]int{}
			for _, m := range []string{upstream.ListTools, upstream.ListPrompts, upstream.ListResources, upstream.ListTemplates} {
				n[m] = len(lf.times(m))
			}
			return n
		}
		steps := []struct {
			what   string
			change func()
			want   map[string]int
		}{
			{"tools/list_changed", func() {
				for _, name := range []string{"a", "b", "c"} {
					f.server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
						func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
							return &mcp.CallToolResult{}, nil
						})
				}
			}, map[string]int{upstream.ListTools: 2, upstream.ListPrompts: 1, upstream.ListResources: 1, upstream.ListTemplates: 1}},
			{"prompts/list_changed", func() { f.server.AddPrompt(&mcp.Prompt{Name: "more"}, noPrompt) },
				map[string]int{upstream.ListTools: 2, upstream.ListPrompts: 2, upstream.ListResources: 1, upstream.ListTemplates: 1}},
			{"resources/list_changed", func() { f.server.AddResource(&mcp.Resource{URI: "fake://more", Name: "more"}, readNothing) },
				map[string]int{upstream.ListTools: 2, upstream.ListPrompts: 2, upstream.ListResources: 2, upstream.ListTemplates: 2}},
		}
		for _, st := range steps {
			st.change()
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if got := asked(); !maps.Equal(got, st.want) {
				t.Errorf("after %s: lists asked %v, want %v", st.what, got, st.want)
			}
		}
		if got := h.Catalog(); len(got.Tools) != tools+3 || len(got.Prompts) != 2 || len(got.Resources) != 2 {
			t.Errorf("catalog after the changes: %d tools, %d prompts, %d resources; want %d, 2, 2", len(got.Tools), len(got.Prompts), len(got.Resources), tools+3)
		}
	})
}

// TestListChangedLeavesRetriesAlone: a list_changed for the tools does not
// reschedule or count a failing list it did not ask for again.
func TestListChangedLeavesRetriesAlone(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		lf := withCatalog(f)
		lf.set(upstream.ListPrompts, refused)
		var changes atomic.Int32
		h, _ := catalogHandle(t, fakeSpec("halfway"), &changes)
		defer h.Close(context.Background())
		synctest.Wait()
		before := h.Status()
		if before.Catalog != upstream.CatalogPartial || before.CatalogRetry.IsZero() {
			t.Fatalf("not partial: %+v", before)
		}
		time.Sleep(time.Second)
		addTool(f, "added")
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		after := h.Status()
		if after.Tools != before.Tools+1 {
			t.Errorf("%d tools after tools/list_changed, want %d", after.Tools, before.Tools+1)
		}
		if !after.CatalogRetry.Equal(before.CatalogRetry) || after.ListFailures[upstream.ListPrompts] != 1 || after.Catalog != upstream.CatalogPartial {
			t.Errorf("the failing prompts/list's retry moved: before %v (%d failures), after %v (%d failures), catalog %s",
				before.CatalogRetry, before.ListFailures[upstream.ListPrompts], after.CatalogRetry, after.ListFailures[upstream.ListPrompts], after.Catalog)
		}
		if n := len(lf.times(upstream.ListPrompts)); n != 1 {
			t.Errorf("prompts/list asked %d times, want once (its retry is not due)", n)
		}
		time.Sleep(time.Until(before.CatalogRetry) + time.Millisecond)
		synctest.Wait()
		if n := len(lf.times(upstream.ListPrompts)); n != 2 {
			t.Errorf("prompts/list asked %d times once its retry was due, want 2", n)
		}
	})
}

// TestListEdgeCases: -32601 is an empty list, not a failure; a list that
// never answers fails at the connect timeout, and the tools are served
// then; tools/list failing still fails the start.
func TestListEdgeCases(t *testing.T) {
	t.Run("method not found", func(t *testing.T) {
		bubble(t, func(t *testing.T, f *fakeUpstream) {
			lf := withCatalog(f)
			lf.set(upstream.ListTemplates, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"})
			var changes atomic.Int32
			h, _ := catalogHandle(t, fakeSpec("old"), &changes)
			defer h.Close(context.Background())
			synctest.Wait()
			st := h.Status()
			if st.Catalog != upstream.CatalogComplete || st.ListFailures != nil || len(h.Catalog().Templates) != 0 || !st.CatalogRetry.IsZero() {
				t.Errorf("-32601: %+v", st)
			}
		})
	})
	t.Run("hang", func(t *testing.T) {
		bubble(t, func(t *testing.T, f *fakeUpstream) {
			lf := withCatalog(f)
			lf.hang[upstream.ListPrompts] = true
			var changes atomic.Int32
			start := time.Now()
			h, _ := catalogHandle(t, fakeSpec("stuck"), &changes)
			defer h.Close(context.Background())
			<-h.FirstAttempt()
			if d := time.Since(start); d != 5*time.Second {
				t.Errorf("first attempt took %s, want the 5s connect timeout", d)
			}
			st := h.Status()
			if st.State != upstream.StateReady || st.Catalog != upstream.CatalogPartial ||
				!strings.Contains(st.CatalogErrors[upstream.ListPrompts], "no answer within the connect timeout") {
				t.Errorf("hanging prompts/list: %+v", st)
			}
			lf.mu.Lock()
			lf.hang[upstream.ListPrompts] = false
			lf.mu.Unlock()
		})
	})
	t.Run("tools/list", func(t *testing.T) {
		bubble(t, func(t *testing.T, f *fakeUpstream) {
			lf := withCatalog(f)
			lf.set(upstream.ListTools, refused)
			var changes atomic.Int32
			h, _ := catalogHandle(t, fakeSpec("broken"), &changes)
			defer h.Close(context.Background())
			synctest.Wait()
			st := h.Status()
			if st.State != upstream.StateRestarting || !strings.Contains(st.LastError, "tools/list: "+refused.Message) || h.Catalog() != nil {
				t.Errorf("failing tools/list: %+v", st)
			}
		})
	})
}

// TestSkippedListsAreNeverAsked: SkipPrompts and SkipResources leave those
// lists out; turning a skip off with Update lists them at once.
func TestSkippedListsAreNeverAsked(t *testing.T) {
	bubble(t, func(t *testing.T, f *fakeUpstream) {
		lf := withCatalog(f)
		lf.set(upstream.ListPrompts, refused)
		lf.set(upstream.ListResources, refused)
		spec := fakeSpec("quiet")
		spec.SkipPrompts, spec.SkipResources = true, true
		var changes atomic.Int32
		h, _ := catalogHandle(t, spec, &changes)
		defer h.Close(context.Background())
		synctest.Wait()
		for _, m := range []string{upstream.ListPrompts, upstream.ListResources, upstream.ListTemplates} {
			if n := len(lf.times(m)); n != 0 {
				t.Errorf("%s asked %d times, want never", m, n)
			}
		}
		cat := h.Catalog()
		if st := h.Status(); st.Catalog != upstream.CatalogComplete || len(cat.Prompts)+len(cat.Resources)+len(cat.Templates) != 0 {
			t.Fatalf("skipped lists: %+v", st)
		}

		lf.set(upstream.ListPrompts, nil)
		spec.SkipPrompts = false
		if err := h.Update(spec); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := h.Catalog(); len(got.Prompts) != 1 || len(got.Resources) != 0 || !got.Complete() {
			t.Errorf("after listing prompts again: %+v", got)
		}
		if n := len(lf.times(upstream.ListResources)); n != 0 {
			t.Errorf("resources/list asked %d times while skipped", n)
		}
	})
}
