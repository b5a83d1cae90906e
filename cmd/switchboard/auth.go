package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-switchboard/switchboard/proxy"
	"github.com/mcp-switchboard/switchboard/proxy/view"
	"github.com/mcp-switchboard/switchboard/upstream"
	"github.com/mcp-switchboard/switchboard/upstream/oauth"
)

const authUsage = `Usage:
  switchboard auth login NAME [--config FILE] [--no-browser]   consent for server NAME, store its token
  switchboard auth status [--config FILE]                      each oauth server's grant and token state
  switchboard auth logout NAME [--config FILE]                 forget server NAME's token
`

// cmdAuth runs the auth subcommands: the person's part of a server's OAuth
// (authorization code), and the tokens' state.
func cmdAuth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, authUsage)
		return exitConfig
	}
	sub, rest := args[0], args[1:]
	var name string
	if (sub == "login" || sub == "logout") && len(rest) > 0 && rest[0] != "" && rest[0][0] != '-' {
		name, rest = rest[0], rest[1:]
	}
	var path string
	var noBrowser bool
	fs := newFlags("auth "+sub, "auth "+sub+" [NAME] [--config FILE]", stderr)
	fs.StringVar(&path, "config", "", "config file (the one serve runs with)")
	if sub == "login" {
		fs.BoolVar(&noBrowser, "no-browser", false, "print the authorization URL only; open no browser")
	}
	if code, ok := parseFlags(fs, rest); !ok {
		return code
	}
	c, err := proxy.LoadConfig(proxy.Options{ConfigPath: path})
	if err != nil {
		return configError(stderr, err)
	}
	x, kv := proxy.Expander()
	specs, open := view.OAuthSpecs(c), oauth.OpenStore(x, kv)
	switch sub {
	case "status":
		return authStatus(ctx, specs, open, stdout, stderr)
	case "login", "logout":
		sp, ok := specs[name]
		if !ok {
			fmt.Fprintf(stderr, "switchboard auth %s: %q is not a server with an oauth block in the config (have: %v)\n", sub, name, keys(specs))
			return exitConfig
		}
		st, err := open(ctx, sp.OAuth)
		if err != nil {
			fmt.Fprintln(stderr, "switchboard auth:", err)
			return exitError
		}
		if sub == "logout" {
			n, err := forget(st, name)
			if err != nil {
				fmt.Fprintln(stderr, "switchboard auth logout:", err)
				return exitError
			}
			fmt.Fprintf(stderr, "%s: %d token(s) forgotten\n", name, n)
			return exitOK
		}
		if err := login(ctx, sp, x, st, !noBrowser, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "switchboard auth login:", err)
			return exitError
		}
		return exitOK
	}
	fmt.Fprintf(stderr, "switchboard auth: unknown subcommand %q\n\n%s", sub, authUsage)
	return exitConfig
}

// forget deletes every token kept for server: its own and, with
// token_exchange, each caller's.
func forget(st oauth.Store, server string) (int, error) {
	ks, err := st.Keys()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range ks {
		if k.Server == server {
			if err := st.Delete(k); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// callers counts the callers' tokens kept for server (token_exchange).
func callers(st oauth.Store, server string) int {
	ks, err := st.Keys()
	if err != nil {
		return 0
	}
	n := 0
	for _, k := range ks {
		if k.Server == server && k.Principal != "" {
			n++
		}
	}
	return n
}

func keys(m map[string]upstream.Spec) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// authStatus prints each oauth server's grant, whether a token is kept
// and when it expires; never the token.
func authStatus(ctx context.Context, specs map[string]upstream.Spec, open func(context.Context, *oauth.Config) (oauth.Store, error), stdout, stderr io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tGRANT\tTOKEN\tEXPIRES")
	code := exitOK
	for _, name := range keys(specs) {
		sp := specs[name]
		has, expires := "no", "-"
		st, err := open(ctx, sp.OAuth)
		var e *oauth.Entry
		if err == nil {
			e, err = st.Load(oauth.Key{Server: name})
		}
		switch {
		case err != nil:
			has, code = "error: "+err.Error(), exitError
		case e != nil && e.Token != nil:
			has = "yes"
			if e.Token.RefreshToken != "" {
				has = "yes (refreshable)"
			}
			if !e.Token.Expiry.IsZero() {
				expires = e.Token.Expiry.UTC().Format(time.RFC3339)
			}
		}
		if err == nil {
			if n := callers(st, name); n > 0 {
				has += fmt.Sprintf(" (+%d callers')", n)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, sp.OAuth.Grant, has, expires)
	}
	tw.Flush()
	return code
}

// login runs the authorization-code flow for one server: an initialize
// POST draws the 401 that starts discovery; the authorization URL is the
// first line of stdout; the redirect comes back to the loopback redirect
// URI; the handler stores the token.
func login(ctx context.Context, sp upstream.Spec, x oauth.Expander, st oauth.Store, browser bool, stdout, stderr io.Writer) error {
	if sp.OAuth.Grant != oauth.GrantAuthorizationCode {
		return fmt.Errorf("%s: grant %q needs no consent; serve obtains its tokens", sp.Name, sp.OAuth.Grant)
	}
	endpoint, err := x.Expand(ctx, sp.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	redirect, err := url.Parse(sp.OAuth.Redirect())
	if err != nil {
		return fmt.Errorf("redirectUri: %w", err)
	}
	ln, err := net.Listen("tcp", redirect.Host)
	if err != nil {
		return fmt.Errorf("the redirect URI's address %s: %w", redirect.Host, err)
	}
	defer ln.Close()
	results := make(chan *auth.AuthorizationResult, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != redirect.Path {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			fmt.Fprintf(w, "switchboard: authorization refused (%s). You may close this window.\n", e)
		} else {
			fmt.Fprintln(w, "switchboard: authorized. You may close this window.")
		}
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	fetch := func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		fmt.Fprintln(stdout, a.URL)
		fmt.Fprintf(stderr, "%s: open the URL above to consent; waiting for the redirect to %s\n", sp.Name, redirect)
		if browser {
			openBrowser(a.URL)
		}
		select {
		case r := <-results:
			if r.Code == "" {
				return nil, errors.New("the authorization server sent no code")
			}
			return r, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// A token kept from before is dropped, so that the server asks for
	// a new consent.
	if err := st.Delete(oauth.Key{Server: sp.Name}); err != nil {
		return err
	}
	h, err := oauth.New(ctx, oauth.Params{Key: oauth.Key{Server: sp.Name}, URL: endpoint, Config: sp.OAuth,
		Expand: x.Expand, Store: st, Fetcher: fetch})
	if err != nil {
		return err
	}
	ep, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	home := func(u *url.URL) bool { return u.Scheme == ep.Scheme && u.Host == ep.Host }
	hc := &http.Client{Transport: &oauth.Transport{Base: http.DefaultTransport, Handler: h, Home: home, Server: sp.Name}}
	// A session as serve opens it: a server may ask for a token at
	// initialize or only at tools/list.
	cl := mcp.NewClient(&mcp.Implementation{Name: "switchboard-auth-login", Version: proxy.Version}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return err
	}
	_, lerr := cs.ListTools(ctx, nil)
	cs.Close()
	if e, _ := st.Load(oauth.Key{Server: sp.Name}); e == nil || e.Token == nil {
		return fmt.Errorf("%s: no token was obtained (the server asked for none at initialize and tools/list: %v)", sp.Name, lerr)
	}
	fmt.Fprintf(stderr, "%s: token stored\n", sp.Name)
	return nil
}

// openBrowser opens u where a browser is present; else the printed URL
// is all.
func openBrowser(u string) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return
		}
		cmd = exec.Command("xdg-open", u)
	}
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}
