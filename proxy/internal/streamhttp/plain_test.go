package streamhttp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestPlainAnswersKeepTheirBytes: lone calls answered at once as plain
// JSON, many at a time and of sizes on both sides of maxPlainBuf, each get
// their own answer, byte for byte: a buffer goes back to plainBufs only
// once its answer is written (under -race, a reuse while net/http still
// reads it is a race).
func TestPlainAnswersKeepTheirBytes(t *testing.T) {
	f := serve(t)
	sid := initialize(t, f, nil)
	sizes := []int{1, 100, 700, 5000, maxPlainBuf - 200, maxPlainBuf + 1000, 3 * maxPlainBuf}
	const workers, calls = 8, 30
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				text := fmt.Sprintf("w%d-c%d-", w, i)
				text += strings.Repeat(string(rune('a'+(w+i)%26)), sizes[(w+i)%len(sizes)])
				if err := plainEcho(f, sid, 100+w*calls+i, text); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// plainEcho calls echo with text, as request id, and checks that the
// answer is plain JSON with that ID and text.
func plainEcho(f *fixture, sid string, id int, text string) error {
	args, _ := json.Marshal(map[string]string{"text": text})
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":%s}}`, id, args)
	resp, err := rawSend(f, http.MethodPost, sid, strings.NewReader(body), v25)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("call %d: answered as %q, want plain JSON", id, ct)
	}
	var got struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		return fmt.Errorf("call %d: %v in %.200q", id, err, raw)
	}
	if got.ID != id || len(got.Result.Content) != 1 || got.Result.Content[0].Text != text {
		return fmt.Errorf("call %d of %d bytes: answered %.200q", id, len(text), raw)
	}
	return nil
}
