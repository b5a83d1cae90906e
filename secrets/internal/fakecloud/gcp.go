package fakecloud

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// GCP is a fake GCP Secret Manager: versions:access only, plus an OAuth
// token endpoint at /token for a trusted test service account.
type GCP struct {
	mu       sync.Mutex
	token    string
	secrets  map[string][]string // "projects/P/secrets/N" → versions (1-based)
	denied   map[string]bool
	accounts map[string]*rsa.PublicKey // client_email → key
	calls    int
}

// NewGCP returns a fake holding secrets ("projects/P/secrets/N" → the value
// of version 1). If token is not empty, every access call must carry
// "Authorization: Bearer <token>".
func NewGCP(secrets map[string]string, token string) *GCP {
	g := &GCP{token: token, secrets: map[string][]string{}, denied: map[string]bool{}, accounts: map[string]*rsa.PublicKey{}}
	for k, v := range secrets {
		g.Put(k, v)
	}
	return g
}

// Put adds a new version to secret ("projects/P/secrets/N") and returns its
// number.
func (g *GCP) Put(secret, value string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.secrets[secret] = append(g.secrets[secret], value)
	return len(g.secrets[secret])
}

// Deny makes access to secret fail with PERMISSION_DENIED.
func (g *GCP) Deny(secret string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.denied[secret] = true
}

// Calls returns how many access requests passed authentication.
func (g *GCP) Calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// ServiceAccount is a test service account key.
type ServiceAccount struct {
	Email string
	Key   *rsa.PrivateKey
}

// NewServiceAccount makes a service account with a fresh 2048-bit key.
func NewServiceAccount(email string) (*ServiceAccount, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &ServiceAccount{Email: email, Key: k}, nil
}

// JSON returns a service_account credentials file whose token_uri is
// tokenURL, as GOOGLE_APPLICATION_CREDENTIALS would name.
func (sa *ServiceAccount) JSON(project, tokenURL string) []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(sa.Key)
	b, _ := json.MarshalIndent(map[string]string{
		"type":           "service_account",
		"project_id":     project,
		"private_key_id": "fake-key-1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   sa.Email,
		"client_id":      "100000000000000000001",
		"token_uri":      tokenURL,
	}, "", "  ")
	return b
}

// Trust makes the /token endpoint accept JWT assertions signed by sa and
// answer with the fake's access token.
func (g *GCP) Trust(sa *ServiceAccount) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.accounts[sa.Email] = &sa.Key.PublicKey
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// ServeHTTP implements http.Handler.
func (g *GCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		g.serveToken(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	name, ok2 := strings.CutSuffix(rest, ":access")
	parts := strings.Split(name, "/")
	if !ok || !ok2 || len(parts) != 6 || parts[0] != "projects" || parts[2] != "secrets" || parts[4] != "versions" {
		gcpError(w, 404, "NOT_FOUND", "The requested URL was not found on this server.")
		return
	}
	if r.Method != http.MethodGet {
		gcpError(w, 405, "METHOD_NOT_ALLOWED", "method not allowed")
		return
	}
	if g.token != "" && r.Header.Get("Authorization") != "Bearer "+g.token {
		gcpError(w, 401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	secret := strings.Join(parts[:4], "/")

	g.mu.Lock()
	g.calls++
	versions, denied := g.secrets[secret], g.denied[secret]
	g.mu.Unlock()

	if denied {
		gcpError(w, 403, "PERMISSION_DENIED", fmt.Sprintf("Permission 'secretmanager.versions.access' denied for resource '%s' (or it may not exist).", name))
		return
	}
	if len(versions) == 0 {
		gcpError(w, 404, "NOT_FOUND", fmt.Sprintf("Secret [%s] not found or has no versions.", secret))
		return
	}
	v := len(versions)
	if parts[5] != "latest" {
		n, err := strconv.Atoi(parts[5])
		if err != nil || n < 1 || n > len(versions) {
			gcpError(w, 404, "NOT_FOUND", fmt.Sprintf("Secret Version [%s] not found.", name))
			return
		}
		v = n
	}
	data := []byte(versions[v-1])
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"name": fmt.Sprintf("%s/versions/%d", secret, v),
		"payload": map[string]string{
			"data":       base64.StdEncoding.EncodeToString(data),
			"dataCrc32c": strconv.FormatUint(uint64(crc32.Checksum(data, crc32c)), 10),
		},
	})
}

// serveToken implements the JWT-bearer grant (RFC 7523) that service
// account credentials use.
func (g *GCP) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		oauthError(w, "invalid_request", "POST a form")
		return
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(w, "unsupported_grant_type", "want jwt-bearer")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		oauthError(w, "invalid_grant", "malformed assertion")
		return
	}
	var claims struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		oauthError(w, "invalid_grant", "malformed claims")
		return
	}
	g.mu.Lock()
	key := g.accounts[claims.Iss]
	g.mu.Unlock()
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if key == nil || err != nil || rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig) != nil {
		oauthError(w, "invalid_grant", "Invalid JWT Signature.")
		return
	}
	if !strings.Contains(claims.Scope, "https://www.googleapis.com/auth/cloud-platform") {
		oauthError(w, "invalid_scope", "cloud-platform scope required")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": g.token,
		"token_type":   "Bearer",
		"expires_in":   3600,
	})
}

func gcpError(w http.ResponseWriter, code int, status, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"code": code, "message": msg, "status": status},
	})
}

func oauthError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
