// Command authclient is the conformance suite's client for its auth
// scenarios, played by switchboard: it writes a config with the
// scenario's server as a remote upstream and an oauth block made from the
// scenario's context, runs `switchboard auth login` for the
// authorization-code scenarios (following the printed URL as the person
// would), then runs switchboard and, through it, lists the tools and calls
// one. A consent asked for within the call (a step-up) is given in band:
// switchboard listens on the redirect URI's port and answers the call with
// a URL elicitation, which the client follows, as the person's browser
// would, before it calls again. The suite appends the server's URL to the command and sets
// MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT; SWITCHBOARD_BIN
// names the binary.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cimdURL is the Client ID Metadata Document URL the suite's authorization
// server knows.
const cimdURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "authclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: authclient SERVER_URL")
	}
	url := os.Args[len(os.Args)-1]
	scenario := strings.TrimPrefix(os.Getenv("MCP_CONFORMANCE_SCENARIO"), "auth/")
	ctxJSON := map[string]any{}
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &ctxJSON); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	str := func(k string) string { s, _ := ctxJSON[k].(string); return s }
	bin := os.Getenv("SWITCHBOARD_BIN")
	dir, err := os.MkdirTemp("", "authclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return "secret://file" + p
	}
	env := append(os.Environ(), "SWITCHBOARD_TOKEN_DIR="+filepath.Join(dir, "tokens"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	oauth := map[string]any{}
	login := false
	listen := "127.0.0.1:0"
	switch scenario {
	case "client-credentials-basic":
		env = append(env, "AUTHCLIENT_SECRET="+str("client_secret"))
		oauth = map[string]any{"grant": "client_credentials", "clientId": str("client_id"), "clientSecret": "secret://env/AUTHCLIENT_SECRET"}
	case "client-credentials-jwt":
		oauth = map[string]any{"grant": "client_credentials", "clientId": str("client_id"),
			"privateKey": file("key.pem", str("private_key_pem")), "signingAlgorithm": str("signing_algorithm")}
	case "wif-jwt-bearer":
		oauth = map[string]any{"grant": "jwt_bearer", "clientId": str("client_id"), "assertion": file("sa-token", str("valid_jwt"))}
	case "enterprise-managed-authorization":
		oauth = map[string]any{"grant": "enterprise", "clientId": str("client_id"), "clientSecret": file("secret", str("client_secret")),
			"idpIssuer": str("idp_issuer"), "idpTokenEndpoint": str("idp_token_endpoint"), "idpClientId": str("idp_client_id"), "idToken": file("id_token", str("idp_id_token"))}
	default:
		login = true
		redirect, host, err := freeRedirect()
		if err != nil {
			return err
		}
		listen = host
		oauth = map[string]any{"grant": "authorization_code", "redirectUri": redirect}
		if id := str("client_id"); id != "" {
			oauth["clientId"] = id
			if s := str("client_secret"); s != "" {
				oauth["clientSecret"] = file("secret", s)
			}
		} else {
			oauth["clientMetadataUrl"] = cimdURL
		}
	}
	cfg := map[string]any{"logLevel": "debug", "mcpServers": map[string]any{"s": map[string]any{"url": url, "type": "http", "oauth": oauth}}}
	b, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if login {
		if err := authLogin(ctx, bin, cfgPath, env); err != nil {
			return err
		}
	}
	return callThrough(ctx, bin, cfgPath, dir, listen, env)
}

// freeRedirect is a loopback redirect URI on a port free now, switchboard's
// own callback path there, and its host: auth login takes the redirect on
// it, then switchboard serves there.
func freeRedirect() (string, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	defer ln.Close()
	return fmt.Sprintf("http://%s/oauth/callback", ln.Addr()), ln.Addr().String(), nil
}

// authLogin runs `switchboard auth login s` and follows the URL it prints
// first, as a person's browser would: the suite's authorization endpoint
// redirects straight to the redirect URI with a code.
func authLogin(ctx context.Context, bin, cfg string, env []string) error {
	cmd := exec.CommandContext(ctx, bin, "auth", "login", "s", "--config", cfg, "--no-browser")
	cmd.Env, cmd.Stderr = env, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// The first line is the authorization URL; a step-up prints another.
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		u := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(u, "http") {
			continue
		}
		fmt.Fprintln(os.Stderr, "authclient: following", u)
		if resp, err := http.Get(u); err != nil {
			fmt.Fprintln(os.Stderr, "authclient: following the authorization URL:", err)
		} else {
			resp.Body.Close()
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("auth login: %w", err)
	}
	return nil
}

// callThrough runs switchboard serve and, through it, lists the tools and
// calls the first.
func callThrough(ctx context.Context, bin, cfg, dir, listen string, env []string) error {
	ready := filepath.Join(dir, "ready")
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg, "--listen", listen, "--admin-listen", "127.0.0.1:0", "--ready-file", ready)
	cmd.Env, cmd.Stderr = env, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	var addr string
	for addr == "" {
		if b, err := os.ReadFile(ready); err == nil && len(strings.Fields(string(b))) == 2 {
			addr = strings.Fields(string(b))[0]
			break
		}
		select {
		case <-ctx.Done():
			return errors.New("switchboard did not get ready")
		case <-time.After(20 * time.Millisecond):
		}
	}
	completed := make(chan string, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "authclient", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			completed <- r.Params.ElicitationID
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect to switchboard: %w", err)
	}
	defer cs.Close()
	// The upstream's tools arrive once switchboard's first connect to it
	// is through: wait for them.
	// Under the suite's 30 s for the whole client.
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var tools []*mcp.Tool
	for len(tools) == 0 {
		res, err := cs.ListTools(lctx, nil)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = res.Tools // the config has the one server
		if len(tools) == 0 {
			select {
			case <-lctx.Done():
				return fmt.Errorf("no tool of the server came through switchboard (got %d tools)", len(res.Tools))
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	call := func() (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tools[0].Name, Arguments: map[string]any{}})
	}
	res, err := call()
	var urlErr *jsonrpc.Error
	if errors.As(err, &urlErr) && urlErr.Code == mcp.CodeURLElicitationRequired {
		if err := consentInBand(ctx, urlErr, completed); err != nil {
			return err
		}
		res, err = call()
	}
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", tools[0].Name, err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		return fmt.Errorf("tools/call %s: tool error %s", tools[0].Name, b)
	}
	fmt.Fprintln(os.Stderr, "authclient: called", tools[0].Name)
	return nil
}

// consentInBand gives the consent a call was refused for: it follows each
// elicitation's URL with a browser's cookie jar (switchboard's start URL
// redirects to the authorization server, which redirects back to
// switchboard's callback) and waits for switchboard to say the consent is
// complete.
func consentInBand(ctx context.Context, e *jsonrpc.Error, completed <-chan string) error {
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || len(data.Elicitations) == 0 {
		return fmt.Errorf("a URL elicitation error without elicitations: %s", e.Data)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	for _, el := range data.Elicitations {
		fmt.Fprintln(os.Stderr, "authclient: consenting in band at", el.URL)
		resp, err := browser.Get(el.URL)
		if err != nil {
			return fmt.Errorf("following %s: %w", el.URL, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("following %s: %s", el.URL, resp.Status)
		}
		select {
		case id := <-completed:
			if id != el.ElicitationID {
				return fmt.Errorf("completion of elicitation %q, want %q", id, el.ElicitationID)
			}
		case <-ctx.Done():
			return errors.New("switchboard did not say the consent was complete")
		}
	}
	return nil
}
