package discovery

// The measurement of issue 22: recall of Search on the labelled requests,
// the tokens tools/list costs in each mode, and Search's latency. Run
// with -v to see the figures (docs/discovery-figures.md).

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// The targets.
const (
	wantRecall1    = 0.7
	wantRecall5    = 0.9
	wantTokenRatio = 0.10 // search-mode tokens / all-mode tokens
)

// TestRecall checks recall@1 and recall@5 of Search on
// testdata/queries.jsonl over the recorded catalog, and logs every
// request whose label is not first.
func TestRecall(t *testing.T) {
	c := loadCatalog(t)
	qs := loadQueries(t)
	ix := New(c.docs)
	at1, at5 := 0, 0
	for _, q := range qs {
		want, ok := c.byName[q.public()]
		if !ok {
			t.Fatalf("query %q: label %s is not in the catalog", q.Q, q.public())
		}
		hits := ix.Search(q.Q, 5, "")
		rank := slices.IndexFunc(hits, func(h Hit) bool { return h.Doc == want })
		switch {
		case rank == 0:
			at1++
			at5++
		case rank > 0:
			at5++
			t.Logf("rank %d: %q → want %s, first %s", rank+1, q.Q, q.public(), c.docs[hits[0].Doc].Name)
		default:
			first := "nothing"
			if len(hits) > 0 {
				first = c.docs[hits[0].Doc].Name
			}
			t.Logf("miss:   %q → want %s, first %s", q.Q, q.public(), first)
		}
	}
	r1, r5 := float64(at1)/float64(len(qs)), float64(at5)/float64(len(qs))
	t.Logf("recall@1 %.3f (%d/%d), recall@5 %.3f (%d/%d); %d tools of %d servers",
		r1, at1, len(qs), r5, at5, len(qs), len(c.docs), len(c.servers))
	if r1 < wantRecall1 || r5 < wantRecall5 {
		t.Errorf("recall@1 %.3f, recall@5 %.3f: want at least %.2f and %.2f (issue 22)", r1, r5, wantRecall1, wantRecall5)
	}
}

// TestTokens counts the tokens of the tools/list result in "all" mode
// (every tool) and in "search" mode (switchboard_find_tools and
// switchboard_call_tool), with the o200k_base and cl100k_base encodings,
// whose tables tiktoken-go-loader embeds (no network), and as bytes/4.
func TestTokens(t *testing.T) {
	c := loadCatalog(t)
	all, err := json.Marshal(map[string]any{"tools": c.tools})
	if err != nil {
		t.Fatal(err)
	}
	search := []byte(`{"tools":[` + findToolsDef + `,` + callToolDef + `]}`)
	if !json.Valid(search) {
		t.Fatal("the search-mode tool definitions are not valid JSON")
	}
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		tk, err := tiktoken.GetEncoding(enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		na, ns := len(tk.Encode(string(all), nil, nil)), len(tk.Encode(string(search), nil, nil))
		ratio := float64(ns) / float64(na)
		t.Logf("%s: all %d tokens (%d tools), search %d tokens: %.2f%%", enc, na, len(c.tools), ns, 100*ratio)
		if ratio > wantTokenRatio {
			t.Errorf("%s: search mode is %.1f%% of all: want at most %.0f%% (issue 22)", enc, 100*ratio, 100*wantTokenRatio)
		}
	}
	t.Logf("bytes/4: all %d, search %d: %.2f%%", len(all)/4, len(search)/4, 100*float64(len(search))/float64(len(all)))
}

// TestSearchLatency logs Search's p50 and p99 over the labelled requests,
// at the recorded catalog and at ten copies of it. Timings are printed,
// never asserted.
func TestSearchLatency(t *testing.T) {
	c := loadCatalog(t)
	qs := loadQueries(t)
	rounds := 20
	if testing.Short() {
		rounds = 2
	}
	for _, copies := range []int{1, 10} {
		docs := replicate(c.docs, copies)
		start := time.Now()
		ix := New(docs)
		build := time.Since(start)
		var ds []time.Duration
		for range rounds {
			for _, q := range qs {
				start := time.Now()
				ix.Search(q.Q, 5, "")
				ds = append(ds, time.Since(start))
			}
		}
		slices.Sort(ds)
		t.Logf("%d tools: New %v; Search p50 %v, p99 %v, max %v over %d searches",
			len(docs), build.Round(time.Microsecond), ds[len(ds)/2], ds[len(ds)*99/100], ds[len(ds)-1], len(ds))
	}
}

func benchmarkSearch(b *testing.B, copies int) {
	c := loadCatalog(b)
	qs := loadQueries(b)
	ix := New(replicate(c.docs, copies))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ix.Search(qs[i%len(qs)].Q, 5, "")
	}
}

// BenchmarkSearch300 searches the recorded catalog (322 tools).
func BenchmarkSearch300(b *testing.B) { benchmarkSearch(b, 1) }

// BenchmarkSearch3000 searches ten copies of it (3,220 tools).
func BenchmarkSearch3000(b *testing.B) { benchmarkSearch(b, 10) }

// BenchmarkNew3000 builds the index of ten copies of the catalog.
func BenchmarkNew3000(b *testing.B) {
	docs := replicate(loadCatalog(b).docs, 10)
	b.ReportAllocs()
	for b.Loop() {
		New(docs)
	}
}
