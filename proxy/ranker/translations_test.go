package ranker

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var translationsCorpus = flag.String("translations-corpus", "", "learn translations.tsv from this corpus (testdata/translations/extract.js writes it)")

// TestTranslations: the embedded table parses, and translates the words
// a Chinese request for common tools uses. With -translations-corpus it
// first learns the table again (learnTranslations) and writes
// translations.tsv.
func TestTranslations(t *testing.T) {
	if *translationsCorpus != "" {
		writeTranslations(t, *translationsCorpus)
		t.Log("wrote translations.tsv: rebuild the test binary to check it")
	}
	m, err := parseTranslations(translationsTSV)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseTranslations("搜索\tsearch:0.9\tfind:x\n文件\tfile:1.5\n"); err == nil {
		t.Error("a table with a bad probability parses without an error")
	}
	if len(m) < 1000 {
		t.Fatalf("translations.tsv has %d words", len(m))
	}
	for word, want := range map[string]string{"搜索": "search", "文件": "file", "列出": "list", "消息": "messag", "创建": "creat", "群": "group"} {
		ts := m[word]
		if len(ts) == 0 || ts[0].stem != want {
			t.Errorf("%s translates to %v, want %s first", word, ts, want)
		}
	}
	for word, ts := range m {
		if !cjkWord([]byte(word)) || isStop(word) || len(ts) == 0 || len(ts) > 2 {
			t.Errorf("translations.tsv: %q → %v: want a CJK word that is no stop word, and one or two stems", word, ts)
		}
	}
}

// TestTranslationsCrossLanguage: a request in Chinese finds a tool
// described only in English, and one in English a tool described only in
// Chinese; neither word occurs in the other's description.
func TestTranslationsCrossLanguage(t *testing.T) {
	docs := []Doc{
		{Name: "mcp_fs_list_directory", Server: "fs", Description: "List the files and subdirectories of a directory."},
		{Name: "mcp_fs_move", Server: "fs", Description: "Move or rename a file."},
		{Name: "mcp_chat_a", Server: "chat", Description: "调用该接口向指定用户或者群聊发送消息"},
		{Name: "mcp_chat_b", Server: "chat", Description: "获取群组的成员"},
	}
	wantFirst(t, docs, map[string]string{
		"列出文件":                     "mcp_fs_list_directory",
		"send a message to a user": "mcp_chat_a",
	})
}

// The table's bounds: a word is kept when it occurs in at least
// minWordPairs pairs of the corpus, and its one or two most probable
// stems with p ≥ minTranslationP.
const (
	minWordPairs     = 3
	minTranslationP  = 0.3
	maxTranslations  = 2
	translationIters = 8
)

// writeTranslations learns the table from the corpus and writes it.
func writeTranslations(t *testing.T, corpus string) {
	raw, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		t.Fatalf("%s: %v", corpus, err)
	}
	rows, n := learnTranslations(pairs)
	f, err := os.Create("translations.tsv")
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, translationsHeader, n, len(rows))
	for _, r := range rows {
		w.WriteString(r)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

const translationsHeader = `# Chinese words (characters and bigrams, as proxy/ranker tokenizes them)
# and the English stems they translate to, with the probability of each:
# IBM Model 1, 8 iterations of EM, over %d distinct pairs of the English and
# Chinese tool and parameter descriptions of @larksuiteoapi/lark-mcp 0.5.1,
# less the tools of proxy/ranker/testdata/servers/lark.json, on which the
# ranker is scored (proxy/ranker/testdata/translations/extract.js;
# TestTranslations with -translations-corpus). %d words: each seen in at
# least 3 pairs, with its one or two most probable stems of p >= 0.3.
#
# Learned from the descriptions of @larksuiteoapi/lark-mcp, under its licence:
#
# MIT License
#
# Copyright (c) 2025 Lark Technologies Pte. Ltd.
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.
`

// learnTranslations runs IBM Model 1 (the English words of a pair
// generated by its Chinese words or by none) over the distinct pairs,
// each side as the ranker tokenizes it, and returns the table's rows,
// sorted, and the number of pairs learned from.
func learnTranslations(pairs [][2]string) (rows []string, n int) {
	type sentence struct{ en, zh []int32 }
	enID, zhID := map[string]int32{}, map[string]int32{}
	var enWords, zhWords []string
	intern := func(ids map[string]int32, words *[]string, w string) int32 {
		id, ok := ids[w]
		if !ok {
			id = int32(len(*words))
			ids[w] = id
			*words = append(*words, w)
		}
		return id
	}
	seen := map[[2]string]bool{}
	var sents []sentence
	zhPairs := map[int32]int{}
	for _, p := range pairs {
		if seen[p] {
			continue
		}
		seen[p] = true
		var s sentence
		for _, w := range pairTerms(p[0], false) {
			s.en = append(s.en, intern(enID, &enWords, w))
		}
		for _, w := range pairTerms(p[1], true) {
			s.zh = append(s.zh, intern(zhID, &zhWords, w))
		}
		if len(s.en) == 0 || len(s.zh) == 0 {
			continue
		}
		sents = append(sents, s)
		for _, z := range s.zh {
			zhPairs[z]++
		}
	}
	const none = -1 // the empty word, which generates what nothing else does
	key := func(e, z int32) uint64 { return uint64(uint32(e))<<32 | uint64(uint32(z)) }
	prob := map[uint64]float64{} // t(e | z), uniform at first
	for _, s := range sents {
		for _, e := range s.en {
			prob[key(e, none)] = 1
			for _, z := range s.zh {
				prob[key(e, z)] = 1
			}
		}
	}
	for range translationIters {
		count := map[uint64]float64{}
		total := map[int32]float64{}
		for _, s := range sents {
			for _, e := range s.en {
				norm := prob[key(e, none)]
				for _, z := range s.zh {
					norm += prob[key(e, z)]
				}
				c := prob[key(e, none)] / norm
				count[key(e, none)] += c
				total[none] += c
				for _, z := range s.zh {
					c := prob[key(e, z)] / norm
					count[key(e, z)] += c
					total[z] += c
				}
			}
		}
		for k, c := range count {
			prob[k] = c / total[int32(uint32(k))]
		}
	}
	type cand struct {
		stem string
		p    float64
	}
	best := map[int32][]cand{}
	for k, p := range prob {
		z := int32(uint32(k))
		if z != none && p >= minTranslationP && zhPairs[z] >= minWordPairs {
			best[z] = append(best[z], cand{enWords[int32(k>>32)], p})
		}
	}
	for z, cs := range best {
		slices.SortFunc(cs, func(a, b cand) int {
			return cmp.Or(cmp.Compare(b.p, a.p), strings.Compare(a.stem, b.stem))
		})
		var b strings.Builder
		b.WriteString(zhWords[z])
		for _, c := range cs[:min(len(cs), maxTranslations)] {
			fmt.Fprintf(&b, "\t%s:%.3f", c.stem, c.p)
		}
		rows = append(rows, b.String())
	}
	slices.Sort(rows)
	return rows, len(sents)
}

// pairTerms returns the distinct terms of one side of a pair as the
// ranker indexes them: the stems of the English words, or the CJK
// characters and bigrams; stop words left out.
func pairTerms(s string, cjk bool) []string {
	var out []string
	splitWords(s, func(w string) {
		lw := string(appendLower(nil, w))
		if cjkWord([]byte(lw)) != cjk || isStop(lw) {
			return
		}
		if !cjk {
			lw = stem(lw)
		}
		if !slices.Contains(out, lw) {
			out = append(out, lw)
		}
	})
	return out
}
