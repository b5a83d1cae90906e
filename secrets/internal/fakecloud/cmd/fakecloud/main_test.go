package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/mcp-switchboard/switchboard/secrets"
	"github.com/mcp-switchboard/switchboard/secrets/awssm"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	seedFile, ready, sa := filepath.Join(dir, "seed.json"), filepath.Join(dir, "ready.json"), filepath.Join(dir, "sa.json")
	seed := `{"aws": {"accessKeyId": "AKIDSEED", "secretAccessKey": "sk", "secrets": {"db": "{\"password\":\"aws-seeded\"}"}},
	          "gcp": {"token": "tok", "secrets": {"projects/p/secrets/s": "gcp-seeded"}, "credentialsFile": "` + sa + `", "project": "p"}}`
	if err := os.WriteFile(seedFile, []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, seedFile, ready) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	var urls map[string]string
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(ready)
		if err == nil && json.Unmarshal(b, &urls) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ready file not written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", sa)
	r := secrets.NewResolver(secrets.Options{
		Env: func(k string) (string, bool) {
			return map[string]string{"GOOGLE_CLOUD_PROJECT": "p"}[k], k == "GOOGLE_CLOUD_PROJECT"
		},
		GCP: &secrets.GCPOptions{Endpoint: urls["gcp"]},
	})
	defer r.Close()
	got, err := r.Expand(context.Background(), "secret://gcp/s")
	if err != nil || got != "gcp-seeded" {
		t.Fatalf("gcp: %q, %v", got, err)
	}
	sm := awssm.New(awssm.Options{Endpoint: urls["aws"], Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDSEED", "sk", "")})
	if got, err := sm.Fetch(context.Background(), "db", "password"); err != nil || got != "aws-seeded" {
		t.Fatalf("aws: %q, %v", got, err)
	}
}
