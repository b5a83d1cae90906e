package secrets_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/oauth2"

	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/secrets/internal/fakecloud"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDFAKE", SecretAccessKey: "fake-secret-access-key"}

// newAWS serves a fake Secrets Manager and returns the helper options that
// reach it: the test binary as the helper (TestMain), configured through
// the AWS SDK's own chain, from the environment alone.
func newAWS(t *testing.T, seed map[string]string) (*fakecloud.AWS, *secrets.HelperOptions) {
	t.Helper()
	fake := fakecloud.NewAWS(seed, testCreds)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, helperOptions(t, srv.URL, "eu-west-1", testCreds)
}

// helperOptions runs this test binary as the helper with an AWS_*
// environment of its own: no profile, no shared files, no instance
// metadata.
func helperOptions(t *testing.T, endpoint, region string, c aws.Credentials) *secrets.HelperOptions {
	t.Helper()
	home := t.TempDir()
	env := []string{
		testHelperEnv + "=" + home,
		"HOME=" + home,
		"AWS_CONFIG_FILE=" + filepath.Join(home, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
		"AWS_ACCESS_KEY_ID=" + c.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + c.SecretAccessKey,
		"AWS_SESSION_TOKEN=" + c.SessionToken,
		"AWS_REGION=" + region,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
	}
	return &secrets.HelperOptions{Path: os.Args[0], Env: env}
}

func TestAWS(t *testing.T) {
	t.Parallel() // each starts a helper process
	fake, opt := newAWS(t, map[string]string{
		"prod/db":  `{"user":"admin","password":"pa55-AWS-JSON","port":5432,"tls":{"mode":"verify"}}`,
		"plain":    "aws-plain-secret",
		"not-json": "raw-AWS-NOTJSON-value",
	})
	fake.PutBinary("bin", []byte("binary-aws-secret"))
	set := secrets.NewSet()
	r := secrets.NewResolver(secrets.Options{Helper: opt, Redact: set})
	defer r.Close()
	ctx := context.Background()

	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "plain", in: "secret://aws/plain", want: "aws-plain-secret"},
		{name: "whole json", in: "secret://aws/prod/db", want: `{"user":"admin","password":"pa55-AWS-JSON","port":5432,"tls":{"mode":"verify"}}`},
		{name: "json key", in: "secret://aws/prod/db#password", want: "pa55-AWS-JSON"},
		{name: "json number", in: "secret://aws/prod/db#port", want: "5432"},
		{name: "json object", in: "secret://aws/prod/db#tls", want: `{"mode":"verify"}`},
		{name: "arn", in: "secret://aws/arn:aws:secretsmanager:eu-west-1:000000000000:secret:plain-AbCdEf", want: "aws-plain-secret"},
		{name: "binary", in: "secret://aws/bin", want: "binary-aws-secret"},
		{name: "interpolated", in: "Bearer ${secret://aws/plain}", want: "Bearer aws-plain-secret"},
		{name: "missing key", in: "secret://aws/prod/db#nope", wantErr: `secret://aws/prod/db#nope: aws: prod/db: key "nope" not found in the secret's JSON`},
		{name: "not json", in: "secret://aws/not-json#k", wantErr: "secret://aws/not-json#k: aws: not-json: #k given but the secret is not a JSON object"},
		{name: "not found", in: "secret://aws/missing", wantErr: "secret://aws/missing: aws: missing not found: Secrets Manager can't find the specified secret."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Expand(ctx, tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Expand(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				assertNoSecret(t, err, "pa55-AWS-JSON", "admin", "raw-AWS-NOTJSON-value", "aws-plain-secret")
				return
			}
			if err != nil {
				t.Fatalf("Expand(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	_, err := r.Expand(ctx, "secret://aws/missing")
	if !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("not found: %v is not ErrNotFound", err)
	}
	_, err = r.Expand(ctx, "secret://aws/not-json#k")
	if errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("%v is ErrNotFound; only a missing secret or key is", err)
	}
	if out := set.Redact("log: pa55-AWS-JSON aws-plain-secret"); out != "log: [REDACTED] [REDACTED]" {
		t.Errorf("resolved values not registered: %q", out)
	}

	// Rotation: nothing is cached across calls.
	fake.Put("plain", "aws-rotated-secret")
	if got, err := r.Expand(ctx, "secret://aws/plain"); err != nil || got != "aws-rotated-secret" {
		t.Fatalf("after rotation: %q, %v", got, err)
	}
}

func TestAWSBadSignature(t *testing.T) {
	t.Parallel() // each starts a helper process
	srv := httptest.NewServer(fakecloud.NewAWS(map[string]string{"x": "value-x"}, testCreds))
	defer srv.Close()
	tests := []struct {
		name  string
		creds aws.Credentials
		want  string
	}{
		{"wrong secret key", aws.Credentials{AccessKeyID: testCreds.AccessKeyID, SecretAccessKey: "wrong-secret-key"}, "InvalidSignatureException"},
		{"unknown key id", aws.Credentials{AccessKeyID: "AKIDOTHER", SecretAccessKey: testCreds.SecretAccessKey}, "UnrecognizedClientException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := secrets.NewResolver(secrets.Options{Helper: helperOptions(t, srv.URL, "eu-west-1", tt.creds)})
			defer r.Close()
			_, err := r.Expand(context.Background(), "secret://aws/x")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %s", err, tt.want)
			}
		})
	}
}

// TestAWSSessionToken covers temporary (IRSA-style) credentials.
func TestAWSSessionToken(t *testing.T) {
	t.Parallel() // each starts a helper process
	creds := aws.Credentials{AccessKeyID: "ASIAFAKE", SecretAccessKey: "tmp-secret", SessionToken: "session-token-xyz"}
	srv := httptest.NewServer(fakecloud.NewAWS(map[string]string{"x": "value-x"}, creds))
	defer srv.Close()
	r := secrets.NewResolver(secrets.Options{Helper: helperOptions(t, srv.URL, "us-east-1", creds)})
	defer r.Close()
	if got, err := r.Expand(context.Background(), "secret://aws/x"); err != nil || got != "value-x" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
}

// TestAWSEnvChain resolves through the SDK's default chain in a helper that
// inherits the process's environment (HelperOptions.Env nil), found through
// SWITCHBOARD_SECRETS_HELPER.
func TestAWSEnvChain(t *testing.T) {
	srv := httptest.NewServer(fakecloud.NewAWS(map[string]string{"x": "value-from-chain"}, testCreds))
	defer srv.Close()
	home := t.TempDir()
	t.Setenv(testHelperEnv, home)
	t.Setenv(secrets.HelperEnv, os.Args[0])
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_ACCESS_KEY_ID", testCreds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testCreds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "ap-south-1")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", srv.URL)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	r := secrets.NewResolver(secrets.Options{})
	defer r.Close()
	if got, err := r.Expand(context.Background(), "secret://aws/x"); err != nil || got != "value-from-chain" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
}

func newGCP(t *testing.T, seed map[string]string, token string) (*fakecloud.GCP, string) {
	t.Helper()
	fake := fakecloud.NewGCP(seed, token)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, srv.URL
}

func TestGCP(t *testing.T) {
	fake, url := newGCP(t, map[string]string{
		"projects/proj-a/secrets/api-key": "gcp-secret-v1",
		"projects/proj-b/secrets/other":   "gcp-other",
		"projects/proj-a/secrets/denied":  "gcp-denied-value",
	}, "tok-123")
	fake.Put("projects/proj-a/secrets/api-key", "gcp-secret-v2")
	fake.Deny("projects/proj-a/secrets/denied")
	set := secrets.NewSet()
	r := secrets.NewResolver(secrets.Options{
		Env:    envMap(map[string]string{"GOOGLE_CLOUD_PROJECT": "proj-a"}),
		Redact: set,
		GCP: &secrets.GCPOptions{
			Endpoint:    url,
			TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "tok-123"}),
		},
	})
	defer r.Close()
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "latest", in: "secret://gcp/api-key", want: "gcp-secret-v2"},
		{name: "latest explicit", in: "secret://gcp/api-key#latest", want: "gcp-secret-v2"},
		{name: "version", in: "secret://gcp/api-key#1", want: "gcp-secret-v1"},
		{name: "full name", in: "secret://gcp/projects/proj-b/secrets/other", want: "gcp-other"},
		{name: "secret not found", in: "secret://gcp/nope", wantErr: "secret://gcp/nope: gcp: projects/proj-a/secrets/nope/versions/latest not found: Secret [projects/proj-a/secrets/nope] not found or has no versions."},
		{name: "version not found", in: "secret://gcp/api-key#9", wantErr: "gcp: projects/proj-a/secrets/api-key/versions/9 not found"},
		{name: "denied", in: "secret://gcp/denied", wantErr: "gcp: permission denied on projects/proj-a/secrets/denied/versions/latest (the identity needs roles/secretmanager.secretAccessor): Permission 'secretmanager.versions.access' denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Expand(context.Background(), tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Expand(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				assertNoSecret(t, err, "gcp-denied-value", "gcp-secret-v2")
				return
			}
			if err != nil {
				t.Fatalf("Expand(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if out := set.Redact("gcp-secret-v2"); out != secrets.Redacted {
		t.Errorf("not registered: %q", out)
	}
	// Rotation.
	fake.Put("projects/proj-a/secrets/api-key", "gcp-secret-v3")
	if got, err := r.Expand(context.Background(), "secret://gcp/api-key"); err != nil || got != "gcp-secret-v3" {
		t.Fatalf("after rotation: %q, %v", got, err)
	}
}

func TestGCPErrors(t *testing.T) {
	_, url := newGCP(t, map[string]string{"projects/p/secrets/s": "v"}, "right-token")
	t.Run("wrong token", func(t *testing.T) {
		r := secrets.NewResolver(secrets.Options{GCP: &secrets.GCPOptions{Endpoint: url, TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "wrong"})}})
		defer r.Close()
		_, err := r.Expand(context.Background(), "secret://gcp/projects/p/secrets/s")
		if err == nil || !strings.Contains(err.Error(), "gcp: unauthenticated for projects/p/secrets/s/versions/latest") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no auth", func(t *testing.T) {
		r := secrets.NewResolver(secrets.Options{GCP: &secrets.GCPOptions{Endpoint: url, NoAuth: true}})
		defer r.Close()
		_, err := r.Expand(context.Background(), "secret://gcp/projects/p/secrets/s")
		if err == nil || !strings.Contains(err.Error(), "unauthenticated") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no project", func(t *testing.T) {
		r := secrets.NewResolver(secrets.Options{Env: envMap(nil), GCP: &secrets.GCPOptions{Endpoint: url, NoAuth: true}})
		defer r.Close()
		_, err := r.Expand(context.Background(), "secret://gcp/s")
		if err == nil || !strings.Contains(err.Error(), "secret://gcp/s: gcp: no project (set GOOGLE_CLOUD_PROJECT") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{"name": "x", "payload": map[string]string{
				"data": "Y29ycnVwdGVkLXNlY3JldA==", "dataCrc32c": "12345"}})
		}))
		defer srv.Close()
		r := secrets.NewResolver(secrets.Options{GCP: &secrets.GCPOptions{Endpoint: srv.URL, NoAuth: true, Project: "p"}})
		defer r.Close()
		_, err := r.Expand(context.Background(), "secret://gcp/s")
		if err == nil || !strings.Contains(err.Error(), "payload checksum mismatch") {
			t.Fatalf("err = %v", err)
		}
		assertNoSecret(t, err, "corrupted-secret", "Y29ycnVwdGVkLXNlY3JldA")
	})
	t.Run("malformed body", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"payload":{"data":"not base64 SECRETISH"}}`))
		}))
		defer srv.Close()
		r := secrets.NewResolver(secrets.Options{GCP: &secrets.GCPOptions{Endpoint: srv.URL, NoAuth: true, Project: "p"}})
		defer r.Close()
		_, err := r.Expand(context.Background(), "secret://gcp/s")
		if err == nil || !strings.Contains(err.Error(), "malformed response") {
			t.Fatalf("err = %v", err)
		}
		assertNoSecret(t, err, "SECRETISH")
	})
}

// TestGCPApplicationDefaultCredentials runs the real ADC chain: a service
// account file named by GOOGLE_APPLICATION_CREDENTIALS whose token_uri is the
// fake, which checks the signed JWT assertion and issues the access token the
// access call then needs.
func TestGCPApplicationDefaultCredentials(t *testing.T) {
	fake, url := newGCP(t, map[string]string{"projects/adc-proj/secrets/s": "adc-secret"}, "adc-access-token")
	sa, err := fakecloud.NewServiceAccount("switchboard@adc-proj.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	fake.Trust(sa)
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, sa.JSON("adc-proj", url+"/token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv("GOOGLE_CLOUD_PROJECT", "adc-proj")
	r := secrets.NewResolver(secrets.Options{GCP: &secrets.GCPOptions{Endpoint: url}})
	defer r.Close()
	if got, err := r.Expand(context.Background(), "secret://gcp/s"); err != nil || got != "adc-secret" {
		t.Fatalf("Expand = %q, %v", got, err)
	}

	// An untrusted key gets no token.
	other, err := fakecloud.NewServiceAccount("intruder@adc-proj.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, other.JSON("adc-proj", url+"/token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", bad)
	r2 := secrets.NewResolver(secrets.Options{GCP: &secrets.GCPOptions{Endpoint: url}})
	defer r2.Close()
	if _, err := r2.Expand(context.Background(), "secret://gcp/s"); err == nil || !strings.Contains(err.Error(), "gcp: token:") {
		t.Fatalf("untrusted key: err = %v", err)
	}
}

func TestExpandMap(t *testing.T) {
	t.Parallel() // each starts a helper process
	awsFake, awsOpt := newAWS(t, map[string]string{"shared": "shared-aws-value", "db": `{"u":"dbuser","p":"dbpass-1234"}`})
	set := secrets.NewSet()
	r := secrets.NewResolver(secrets.Options{
		Env:    envMap(map[string]string{"TOKEN": "env-token-value", "REGION": "eu"}),
		Helper: awsOpt,
		Redact: set,
	})
	defer r.Close()
	got, err := r.ExpandMap(context.Background(), map[string]string{
		"A":       "secret://aws/shared",
		"B":       "prefix-${secret://aws/shared}",
		"DB_USER": "secret://aws/db#u",
		"DB_PASS": "secret://aws/db#p",
		"TOKEN":   "secret://env/TOKEN",
		"REGION":  "${REGION}",
		"LITERAL": "$${x}",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"A": "shared-aws-value", "B": "prefix-shared-aws-value", "DB_USER": "dbuser", "DB_PASS": "dbpass-1234",
		"TOKEN": "env-token-value", "REGION": "eu", "LITERAL": "${x}",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// "shared" is used twice, "db" by two fields: each fetched once.
	if n := awsFake.Calls(); n != 3 {
		t.Errorf("AWS calls = %d, want 3 (aws/shared, aws/db#u, aws/db#p)", n)
	}
	if out := set.Redact("env-token-value dbpass-1234 eu"); out != "[REDACTED] [REDACTED] eu" {
		t.Errorf("Redact = %q", out)
	}
}

func TestExpandMapErrors(t *testing.T) {
	t.Parallel() // each starts a helper process
	_, awsOpt := newAWS(t, map[string]string{"ok": "fine-value"})
	r := secrets.NewResolver(secrets.Options{Env: envMap(nil), Helper: awsOpt})
	defer r.Close()
	got, err := r.ExpandMap(context.Background(), map[string]string{
		"GOOD":    "secret://aws/ok",
		"MISSING": "secret://aws/missing",
		"ALSO":    "x${secret://aws/missing}",
		"ENV":     "${UNSET_VAR}",
	})
	if got != nil {
		t.Fatalf("got %v, want nil on error", got)
	}
	msg := err.Error()
	for _, want := range []string{
		"ALSO: secret://aws/missing: aws: missing not found",
		"ENV: ${UNSET_VAR}: environment variable UNSET_VAR is not set",
		"MISSING: secret://aws/missing: aws: missing not found",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Index(msg, "ALSO:") > strings.Index(msg, "ENV:") || strings.Index(msg, "ENV:") > strings.Index(msg, "MISSING:") {
		t.Errorf("errors not in key order: %q", msg)
	}
	assertNoSecret(t, err, "fine-value")

	_, err = r.ExpandMap(context.Background(), map[string]string{"BAD": "${secret://aws/}", "OK": "x"})
	if err == nil || !strings.Contains(err.Error(), "BAD: offset 0: secret://aws/: missing secret NAME") {
		t.Fatalf("parse error = %v", err)
	}
}

func TestExpandContextCancelled(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	r := secrets.NewResolver(secrets.Options{GCP: &secrets.GCPOptions{Endpoint: srv.URL, NoAuth: true, Project: "p"}})
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	_, err := r.ExpandMap(ctx, map[string]string{"A": "secret://gcp/a", "B": "secret://gcp/b"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestResolverClose(t *testing.T) {
	r := secrets.NewResolver(secrets.Options{Env: envMap(map[string]string{"A": "a"})})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := r.Expand(context.Background(), "secret://env/A"); !errors.Is(err, secrets.ErrClosed) {
		t.Fatalf("Expand after Close = %v", err)
	}
	if _, err := r.ExpandMap(context.Background(), map[string]string{"A": "x"}); !errors.Is(err, secrets.ErrClosed) {
		t.Fatalf("ExpandMap after Close = %v", err)
	}
}

func assertNoSecret(t *testing.T, err error, values ...string) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(err.Error(), v) {
			t.Errorf("error %q contains the secret %q", err, v)
		}
	}
}
