package helper_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-switchboard/switchboard/secrets/helper"
)

var errMissing = errors.New("missing")

func backends() map[string]helper.Fetch {
	return map[string]helper.Fetch{
		"kv": func(ctx context.Context, path, key string) (string, error) {
			switch path {
			case "missing":
				return "", errMissing
			case "broken":
				return "", errors.New("kv: broken: denied")
			case "slow":
				<-ctx.Done()
				return "", ctx.Err()
			}
			return path + "#" + key, nil
		},
	}
}

func isMissing(err error) bool { return errors.Is(err, errMissing) }

// serve runs Serve over in and returns its responses by ID.
func serve(t *testing.T, in string) (map[uint64]helper.Response, error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := helper.Serve(context.Background(), strings.NewReader(in), pw, backends(), isMissing)
		pw.Close()
		done <- err
	}()
	got := map[uint64]helper.Response{}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var r helper.Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("response %q: %v", sc.Text(), err)
		}
		if _, dup := got[r.ID]; dup {
			t.Fatalf("two responses for %d", r.ID)
		}
		got[r.ID] = r
	}
	return got, <-done
}

func TestServe(t *testing.T) {
	in := `{"id":1,"backend":"kv","path":"a","key":"k"}
{"id":2,"backend":"kv","path":"missing"}
{"id":3,"backend":"kv","path":"broken"}
{"id":4,"backend":"nope","path":"a"}
{"id":5,"backend":"kv","path":"slow","timeoutMs":20}
{"id":6,"backend":"kv","path":"line\nbreak"}
`
	got, err := serve(t, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]helper.Response{
		1: {ID: 1, Value: "a#k"},
		2: {ID: 2, Error: "missing", NotFound: true},
		3: {ID: 3, Error: "kv: broken: denied"},
		4: {ID: 4, Error: `helper: no backend "nope"`},
		5: {ID: 5, Error: context.DeadlineExceeded.Error()},
		6: {ID: 6, Value: "line\nbreak#"},
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("response %d = %+v, want %+v", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d responses, want %d", len(got), len(want))
	}
}

func TestServeMalformed(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
		answered          int
	}{
		{name: "not JSON", in: "{\"id\":1,\"backend\":\"kv\",\"path\":\"a\"}\nnot json\n{\"id\":2,\"backend\":\"kv\",\"path\":\"b\"}\n", wantErr: "malformed request", answered: 1},
		{name: "too long", in: strings.Repeat("x", helper.MaxLine+1) + "\n", wantErr: "token too long"},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := serve(t, tt.in)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Serve = %v, want %q", err, tt.wantErr)
			}
			if len(got) != tt.answered {
				t.Fatalf("%d answered, want %d (requests before the bad line are answered, none after)", len(got), tt.answered)
			}
		})
	}
}

// TestServeAnswersBeforeReturning: the end of input waits for the requests
// in flight, so a parent that closes stdin still gets every answer.
func TestServeAnswersBeforeReturning(t *testing.T) {
	slow := map[string]helper.Fetch{"kv": func(ctx context.Context, path, _ string) (string, error) {
		time.Sleep(50 * time.Millisecond)
		return path, nil
	}}
	var out strings.Builder
	in := `{"id":1,"backend":"kv","path":"a"}` + "\n" + `{"id":2,"backend":"kv","path":"b"}` + "\n"
	if err := helper.Serve(context.Background(), strings.NewReader(in), &out, slow, nil); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("%d answers written before Serve returned, want 2: %q", n, out.String())
	}
}

func FuzzServe(f *testing.F) {
	f.Add([]byte(`{"id":1,"backend":"kv","path":"a","key":"k"}` + "\n"))
	f.Add([]byte(`{"id":2,"backend":"kv","path":"missing"}` + "\n" + `{"id":3}` + "\n"))
	f.Add([]byte("{\"id\":-1}\n\x00\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out strings.Builder
		_ = helper.Serve(context.Background(), strings.NewReader(string(in)), &out, map[string]helper.Fetch{
			"kv": func(_ context.Context, path, key string) (string, error) { return path + key, nil },
		}, nil)
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		sc.Buffer(nil, helper.MaxLine)
		for sc.Scan() {
			var r helper.Response
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("answer %q is not a Response: %v", sc.Text(), err)
			}
		}
	})
}
