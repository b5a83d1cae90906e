package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// GCP Secret Manager is reached through its REST API with a token from the
// application-default credential chain (golang.org/x/oauth2/google), not
// through cloud.google.com/go/secretmanager: the official client pulls in
// gRPC, protobuf and the generated Google API surface (tens of modules) for
// the one call we make, and this package is part of a security component
// whose dependencies we keep few (STYLE §1). Token exchange stays in the
// oauth2 library; only the access call is written here.

// DefaultGCPEndpoint is the Secret Manager REST endpoint.
const DefaultGCPEndpoint = "https://secretmanager.googleapis.com"

const gcpScope = "https://www.googleapis.com/auth/cloud-platform"

// GCPOptions configures GCP Secret Manager access.
type GCPOptions struct {
	// Endpoint is the REST endpoint. If empty, DefaultGCPEndpoint is used.
	// Tests point it at a fake.
	Endpoint string
	// TokenSource supplies access tokens. If nil (and NoAuth is false), the
	// application-default chain is used: GOOGLE_APPLICATION_CREDENTIALS, the
	// gcloud user credentials, then the metadata server (GKE workload
	// identity).
	TokenSource oauth2.TokenSource
	// NoAuth sends requests without an Authorization header. For tests
	// only; the zero value authenticates.
	NoAuth bool
	// Project is the project for short references (secret://gcp/NAME). If
	// empty, GOOGLE_CLOUD_PROJECT is used.
	Project string
	// HTTPClient makes the requests. If nil, a client with the default
	// transport is used.
	HTTPClient *http.Client
}

type gcpProvider struct {
	opt    GCPOptions
	client *http.Client
	ctx    context.Context // for token refreshes; cancelled by close
	cancel context.CancelFunc

	mu sync.Mutex
	ts oauth2.TokenSource
}

func newGCPProvider(opt GCPOptions) *gcpProvider {
	if opt.Endpoint == "" {
		opt.Endpoint = DefaultGCPEndpoint
	}
	opt.Endpoint = strings.TrimRight(opt.Endpoint, "/")
	c := opt.HTTPClient
	if c == nil {
		c = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &gcpProvider{opt: opt, client: c, ctx: ctx, cancel: cancel, ts: opt.TokenSource}
}

func (p *gcpProvider) close() {
	p.cancel()
	p.client.CloseIdleConnections()
}

// tokenSource returns the configured source, finding the default
// credentials on first use.
func (p *gcpProvider) tokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ts != nil {
		return p.ts, nil
	}
	ts, err := google.DefaultTokenSource(p.ctx, gcpScope)
	if err != nil {
		return nil, fmt.Errorf("gcp: application default credentials: %w", err)
	}
	p.ts = ts
	return p.ts, nil
}

// name returns the full version resource name for ref.
func (p *gcpProvider) name(ref Ref) (string, error) {
	secret := ref.Path
	if !strings.HasPrefix(secret, "projects/") {
		if p.opt.Project == "" {
			return "", errors.New("gcp: no project (set GOOGLE_CLOUD_PROJECT or write secret://gcp/projects/PROJECT/secrets/NAME)")
		}
		secret = "projects/" + p.opt.Project + "/secrets/" + secret
	}
	version := ref.Field
	if version == "" {
		version = "latest"
	}
	return secret + "/versions/" + version, nil
}

// gcpAccessResponse is the body of versions:access.
type gcpAccessResponse struct {
	Name    string `json:"name"`
	Payload struct {
		Data []byte `json:"data"` // base64 in JSON
		// DataCrc32c is an int64, which the JSON mapping of protobuf writes
		// as a decimal string; accept a number too.
		DataCrc32c json.RawMessage `json:"dataCrc32c"`
	} `json:"payload"`
}

// gcpErrorResponse is Google's JSON error body.
type gcpErrorResponse struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

func (p *gcpProvider) fetch(ctx context.Context, ref Ref) (string, error) {
	name, err := p.name(ref)
	if err != nil {
		return "", err
	}
	u := p.opt.Endpoint + "/v1/" + (&url.URL{Path: name}).EscapedPath() + ":access"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("gcp: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if !p.opt.NoAuth {
		ts, err := p.tokenSource(ctx)
		if err != nil {
			return "", err
		}
		tok, err := ts.Token()
		if err != nil {
			return "", fmt.Errorf("gcp: token: %w", err)
		}
		tok.SetAuthHeader(req)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("gcp: access %s: %w", name, err)
	}
	defer resp.Body.Close()
	// A payload is at most 64 KiB, about 88 KiB in base64.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("gcp: access %s: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", gcpStatusError(name, resp.StatusCode, body)
	}
	var out gcpAccessResponse
	// The body holds the secret: its decoding errors are replaced by a
	// fixed text, since encoding/json quotes input in some of them.
	if err := json.Unmarshal(body, &out); err != nil {
		return "", fmt.Errorf("gcp: access %s: malformed response", name)
	}
	if raw := strings.Trim(string(out.Payload.DataCrc32c), `"`); raw != "" && raw != "null" {
		want, err := strconv.ParseUint(raw, 10, 32)
		if err != nil {
			return "", fmt.Errorf("gcp: access %s: malformed dataCrc32c", name)
		}
		if got := crc32.Checksum(out.Payload.Data, crc32c); uint64(got) != want {
			return "", fmt.Errorf("gcp: access %s: payload checksum mismatch (corrupted in transit)", name)
		}
	}
	return string(out.Payload.Data), nil
}

// gcpStatusError maps an error response to a message that says what to do.
func gcpStatusError(name string, status int, body []byte) error {
	var e gcpErrorResponse
	_ = json.Unmarshal(body, &e)
	msg := truncate(strings.TrimSpace(e.Error.Message), 300)
	if msg == "" {
		msg = http.StatusText(status)
	}
	switch {
	case status == http.StatusNotFound || e.Error.Status == "NOT_FOUND":
		return notFound("gcp: %s not found: %s", name, msg)
	case status == http.StatusForbidden || e.Error.Status == "PERMISSION_DENIED":
		return fmt.Errorf("gcp: permission denied on %s (the identity needs roles/secretmanager.secretAccessor): %s", name, msg)
	case status == http.StatusUnauthorized || e.Error.Status == "UNAUTHENTICATED":
		return fmt.Errorf("gcp: unauthenticated for %s (check the application default credentials): %s", name, msg)
	case e.Error.Status == "FAILED_PRECONDITION":
		return fmt.Errorf("gcp: %s cannot be accessed (disabled or destroyed version?): %s", name, msg)
	}
	st := e.Error.Status
	if st == "" {
		st = strconv.Itoa(status)
	}
	return fmt.Errorf("gcp: access %s: %s: %s", name, st, msg)
}
