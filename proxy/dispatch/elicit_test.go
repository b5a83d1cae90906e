package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy/telemetry"
	"github.com/mcp-switchboard/switchboard/sanitize"
)

// TestElicitationModes: an upstream's elicitation reaches the client only
// in a mode the client declared. An elicitation capability that names no
// mode takes forms only; URL mode must be declared. What is refused never
// reaches the client, and the error names the server and the mode.
func TestElicitationModes(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Version: "test", Log: hclog.NewNullLogger(),
		Observe: func() telemetry.Observation { return telemetry.Observation{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close(context.Background())
	tr := &trust{log: hclog.NewNullLogger(), serving: NewServing(NewGen(nil, nil, Access{}, Observers{Tel: tel}))}
	const (
		form = `{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`
		url  = `{"mode":"url","message":"Sign in","url":"https://auth.example/login","elicitationId":"e1"}`
	)
	for _, tc := range []struct {
		name   string
		caps   *mcp.ElicitationCapabilities
		params string
		asked  bool
	}{
		{"form to a client that names no mode", &mcp.ElicitationCapabilities{}, form, true},
		{"url to a client that names no mode", &mcp.ElicitationCapabilities{}, url, false},
		{"url to a form-only client", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}, url, false},
		{"url to a url client", &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, url, true},
		{"form to a url-only client", &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, form, false},
		{"form to a client of both", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}, form, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			ask := func(context.Context, string, any) (json.RawMessage, error) {
				asked = true
				return json.RawMessage(`{"action":"accept"}`), nil
			}
			_, err := tr.askClient(context.Background(), &mcp.ClientCapabilities{Elicitation: tc.caps}, ask, "elicitation/create",
				json.RawMessage(tc.params), sanitize.Source{Server: "auth"}, sanitize.Options{Wrap: true})
			if asked != tc.asked {
				t.Fatalf("client asked: %v, want %v (error %v)", asked, tc.asked, err)
			}
			if !tc.asked && (err == nil || !strings.Contains(err.Error(), "server 'auth'") || !strings.Contains(err.Error(), "-mode elicitation")) {
				t.Errorf("refusal: %v; want it to name the server and the mode", err)
			}
		})
	}
}
