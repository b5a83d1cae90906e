package awssm_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/mcp-switchboard/switchboard/secrets/awssm"
	"github.com/mcp-switchboard/switchboard/secrets/internal/fakecloud"
)

var testCreds = aws.Credentials{AccessKeyID: "AKIDFAKE", SecretAccessKey: "fake-secret-access-key"}

func newFake(t *testing.T, seed map[string]string, creds aws.Credentials) (*fakecloud.AWS, string) {
	t.Helper()
	fake := fakecloud.NewAWS(seed, creds)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, srv.URL
}

func static(c aws.Credentials) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
}

func TestFetch(t *testing.T) {
	fake, url := newFake(t, map[string]string{
		"prod/db":  `{"user":"admin","password":"pa55-AWS-JSON","port":5432,"tls":{"mode":"verify"}}`,
		"plain":    "aws-plain-secret",
		"not-json": "raw-AWS-NOTJSON-value",
	}, testCreds)
	fake.PutBinary("bin", []byte("binary-aws-secret"))
	c := awssm.New(awssm.Options{Endpoint: url, Region: "eu-west-1", Credentials: static(testCreds)})
	ctx := context.Background()
	tests := []struct {
		name, path, key, want, wantErr string
		notFound                       bool
	}{
		{name: "plain", path: "plain", want: "aws-plain-secret"},
		{name: "whole json", path: "prod/db", want: `{"user":"admin","password":"pa55-AWS-JSON","port":5432,"tls":{"mode":"verify"}}`},
		{name: "json key", path: "prod/db", key: "password", want: "pa55-AWS-JSON"},
		{name: "json number", path: "prod/db", key: "port", want: "5432"},
		{name: "json object", path: "prod/db", key: "tls", want: `{"mode":"verify"}`},
		{name: "arn", path: "arn:aws:secretsmanager:eu-west-1:000000000000:secret:plain-AbCdEf", want: "aws-plain-secret"},
		{name: "binary", path: "bin", want: "binary-aws-secret"},
		{name: "missing key", path: "prod/db", key: "nope", wantErr: `aws: prod/db: key "nope" not found in the secret's JSON`, notFound: true},
		{name: "not json", path: "not-json", key: "k", wantErr: "aws: not-json: #k given but the secret is not a JSON object"},
		{name: "not found", path: "missing", wantErr: "aws: missing not found: Secrets Manager can't find the specified secret.", notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Fetch(ctx, tt.path, tt.key)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Fetch(%q, %q) = %q, %v; want error %q", tt.path, tt.key, got, err, tt.wantErr)
				}
				if errors.Is(err, awssm.ErrNotFound) != tt.notFound {
					t.Errorf("errors.Is(%v, ErrNotFound) = %v", err, !tt.notFound)
				}
				for _, v := range []string{"pa55-AWS-JSON", "admin", "raw-AWS-NOTJSON-value", "aws-plain-secret"} {
					if strings.Contains(err.Error(), v) {
						t.Errorf("error %q holds the secret %q", err, v)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Fetch(%q, %q) = %q, %v; want %q", tt.path, tt.key, got, err, tt.want)
			}
		})
	}
	// Nothing is cached across calls.
	fake.Put("plain", "aws-rotated-secret")
	if got, err := c.Fetch(ctx, "plain", ""); err != nil || got != "aws-rotated-secret" {
		t.Fatalf("after rotation: %q, %v", got, err)
	}
}

func TestFetchBadSignature(t *testing.T) {
	_, url := newFake(t, map[string]string{"x": "value-x"}, testCreds)
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
			c := awssm.New(awssm.Options{Endpoint: url, Region: "eu-west-1", Credentials: static(tt.creds)})
			_, err := c.Fetch(context.Background(), "x", "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %s", err, tt.want)
			}
		})
	}
}

// TestFetchSessionToken covers temporary (IRSA-style) credentials.
func TestFetchSessionToken(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "ASIAFAKE", SecretAccessKey: "tmp-secret", SessionToken: "session-token-xyz"}
	_, url := newFake(t, map[string]string{"x": "value-x"}, creds)
	c := awssm.New(awssm.Options{Endpoint: url, Region: "us-east-1", Credentials: static(creds)})
	if got, err := c.Fetch(context.Background(), "x", ""); err != nil || got != "value-x" {
		t.Fatalf("Fetch = %q, %v", got, err)
	}
}

// TestFetchEnvChain resolves through the SDK's default chain: credentials,
// region and endpoint all from AWS_* variables.
func TestFetchEnvChain(t *testing.T) {
	_, url := newFake(t, map[string]string{"x": "value-from-chain"}, testCreds)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_ACCESS_KEY_ID", testCreds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testCreds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "ap-south-1")
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", url)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	if got, err := awssm.New(awssm.Options{}).Fetch(context.Background(), "x", ""); err != nil || got != "value-from-chain" {
		t.Fatalf("Fetch = %q, %v", got, err)
	}
}
