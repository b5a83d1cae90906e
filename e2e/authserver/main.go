// Command authserver is the OAuth 2.1 / OpenID authorization server the e2e
// tests run: zitadel/oidc's certified op package over an in-memory store,
// on loopback, with no login page (the person is chosen by login_hint).
//
// Usage:
//
//	authserver --config FILE [--listen 127.0.0.1:0] [--ready-file PATH] [--key PEM] [--issuer URL]
//
// It writes its issuer URL (http://127.0.0.1:PORT, also the base of every
// endpoint; discovery at /.well-known/openid-configuration) to
// --ready-file, or to stdout, once it listens. --key is a PKCS#8 or PKCS#1
// PEM RSA private key that signs tokens (kid: "k1"; default: a fresh key),
// so that two servers can share a key and differ only in their issuer
// (--issuer overrides the URL written in tokens and discovery).
//
// The config file is JSON:
//
//	{"clients": [{
//	   "id": "app", "secret": "s3cret",        // secret: client_secret_basic or _post
//	   "publicKey": "-----BEGIN PUBLIC KEY-----…", "keyId": "k1",
//	                                           // instead of a secret: private_key_jwt,
//	                                           // and the key of the jwt-bearer grant (iss = id)
//	   "redirectURIs": ["http://127.0.0.1/callback"],
//	   "grants": ["authorization_code", "refresh_token", "client_credentials",
//	              "urn:ietf:params:oauth:grant-type:jwt-bearer",
//	              "urn:ietf:params:oauth:grant-type:token-exchange"],
//	                                           // default: all of them
//	   "tokenType": "jwt",                      // or "opaque" (RFC 7662 introspection)
//	   "audience": ["http://127.0.0.1:8080/mcp"], // aud of client-credentials tokens
//	                                           // (default: the client id)
//	   "subject": "svc",                        // sub of client-credentials tokens (default: id)
//	   "claims": {"agent": "alpha"},            // added to its client-credentials tokens
//	   "ttlSeconds": 300,                       // access-token lifetime; negative: issued expired
//	   "idTokenTtlSeconds": 300,                // ID-token lifetime; negative: issued expired
//	   "idJag": {"http://127.0.0.1:9000": "mcp-client"},
//	                                           // as the identity provider: the authorization
//	                                           // servers (issuer → its client id there) this
//	                                           // client may get ID-JAGs for
//	   "idJagTtlSeconds": 300                   // their lifetime; negative: issued expired
//	 }],
//	 "users": [{"id": "alice", "claims": {"agent": "alpha"}}],
//	 "trustedIdps": [{"issuer": "http://127.0.0.1:9001", "jwksUri": "…"}]}
//	                                           // identity providers whose ID-JAGs the JWT
//	                                           // bearer grant takes (jwksUri default: the
//	                                           // one of their OpenID discovery)
//
// Grants: authorization code with PKCE (S256) and refresh tokens: the
// authorization endpoint (/authorize) approves at once the user named by
// login_hint (an unknown or missing one is refused), so a test plays the
// person with an HTTP client that follows redirects; client credentials
// (secret, or a private_key_jwt client assertion); the JWT-profile grant
// (RFC 7523, assertion signed by the client's key, iss = sub = client id;
// op issues an opaque, introspectable token for it);
// token exchange (RFC 8693; asking for offline_access also gets a refresh
// token); revocation (/revoke, RFC 7009); introspection
// (/oauth/introspect, RFC 7662; the introspecting client must authenticate
// and be in the token's audience, or the client the token was issued to).
// The ID-JAG of enterprise-managed authorization (idjag.go), on both
// sides: as the identity provider, a token exchange with
// requested_token_type urn:ietf:params:oauth:token-type:id-jag of an ID
// token it issued to the requesting client, unexpired, for an audience
// the client's idJag names, answers with an ID-JAG (typ
// oauth-id-jag+jwt); as an MCP server's authorization server, the JWT
// bearer grant takes an assertion of that type signed by a trusted
// identity provider, addressed to this issuer, for the client that
// authenticates (client_id), unexpired and not used before, and issues an
// access token for its sub (aud: its resource).
// Scopes a token carries are in its "scope" claim (JWT) or the
// introspection answer. Users' claims go into the JWTs and introspection
// answers issued for them.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "authserver:", err)
		os.Exit(1)
	}
}

func run() error {
	configPath := flag.String("config", "", "JSON file of clients and users")
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	ready := flag.String("ready-file", "", "file the issuer URL is written to once listening (default: stdout)")
	keyPath := flag.String("key", "", "PEM RSA private key that signs tokens (default: a fresh key)")
	issuerFlag := flag.String("issuer", "", "issuer URL (default: http://LISTEN-ADDRESS)")
	flag.Parse()
	var cfg config
	if *configPath != "" {
		b, err := os.ReadFile(*configPath)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("%s: %w", *configPath, err)
		}
	}
	key, err := signingKeyFrom(*keyPath)
	if err != nil {
		return err
	}
	st, err := newStore(cfg, key)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	issuer := *issuerFlag
	if issuer == "" {
		issuer = "http://" + ln.Addr().String()
	}
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:               sha256.Sum256([]byte(issuer)),
		CodeMethodS256:          true,
		AuthMethodPost:          true,
		AuthMethodPrivateKeyJWT: true,
		GrantTypeRefreshToken:   true,
		SupportedUILocales:      []language.Tag{language.English},
		SupportedScopes:         []string{"openid", "profile", "email", "offline_access"},
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure(),
		op.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		return err
	}
	callback := op.AuthCallbackURL(provider)
	srv := &server{LegacyServer: op.NewLegacyServer(provider, *op.DefaultEndpoints), st: st, issuer: issuer, trusted: cfg.TrustedIdPs}
	opHandler := op.RegisterLegacyServer(srv, op.AuthorizeCallbackHandler(provider))
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		// The person named by login_hint approves at once.
		id := r.URL.Query().Get("authRequestID")
		if err := st.approve(id); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, callback(op.ContextWithIssuer(r.Context(), issuer), id), http.StatusFound)
	})
	mux.HandleFunc("/test/refresh-token", func(w http.ResponseWriter, r *http.Request) {
		// What a test revokes: the refresh token last issued to a client,
		// which only the client's own token store holds otherwise.
		tok := st.lastRefresh(r.URL.Query().Get("client"))
		if tok == "" {
			http.Error(w, "no refresh token issued to this client", http.StatusNotFound)
			return
		}
		w.Write([]byte(tok))
	})
	// GET /test/grants: {"GRANT_TYPE": N, …}, the token requests made.
	mux.HandleFunc("/test/grants", func(w http.ResponseWriter, r *http.Request) {
		// How many token requests of each grant type were made: what a
		// test counts to tell a new token exchange from a refresh.
		json.NewEncoder(w).Encode(st.counts())
	})
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == op.DefaultEndpoints.Token.Relative() {
			// Parsed here once; op reads the same parsed form.
			if err := r.ParseForm(); err == nil {
				st.count(r.PostForm.Get("grant_type"))
				if r.PostForm.Get("grant_type") == string(oidc.GrantTypeTokenExchange) && r.PostForm.Get("requested_token_type") == tokenTypeIDJAG {
					srv.exchangeIDJAG(w, r)
					return
				}
			}
		}
		opHandler.ServeHTTP(w, r)
	}))
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	if *ready != "" {
		if err := os.WriteFile(*ready, []byte(issuer+"\n"), 0o644); err != nil {
			return err
		}
	} else {
		fmt.Println(issuer)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return hs.Close()
}

// server is op's legacy server with private_key_jwt client authentication
// on the client-credentials and token-exchange grants too (op checks only
// a secret there).
type server struct {
	*op.LegacyServer
	st      *store
	issuer  string
	trusted []trustedIdP
}

func (s *server) VerifyClient(ctx context.Context, r *op.Request[op.ClientCredentials]) (op.Client, error) {
	if g := r.Form.Get("grant_type"); (g == "client_credentials" || g == string(oidc.GrantTypeTokenExchange)) && r.Data.ClientAssertion != "" {
		ex, ok := s.Provider().(op.JWTAuthorizationGrantExchanger)
		if !ok {
			return nil, errors.New("private_key_jwt not supported")
		}
		return op.AuthorizePrivateJWTKey(ctx, r.Data.ClientAssertion, ex)
	}
	return s.LegacyServer.VerifyClient(ctx, r)
}

func signingKeyFrom(path string) (*rsa.PrivateKey, error) {
	if path == "" {
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New(path + ": not an RSA key")
	}
	return rk, nil
}
