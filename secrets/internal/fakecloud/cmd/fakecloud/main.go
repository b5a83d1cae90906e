// Command fakecloud serves the fake AWS Secrets Manager and GCP Secret
// Manager on 127.0.0.1 for end-to-end tests of the built binary.
//
//	fakecloud -seed seed.json -ready ready.json
//
// The seed file:
//
//	{"aws": {"accessKeyId": "AKID", "secretAccessKey": "SK", "sessionToken": "",
//	         "secrets": {"name": "value"}},
//	 "gcp": {"token": "access-token", "secrets": {"projects/p/secrets/n": "value"},
//	         "credentialsFile": "/tmp/x/sa.json", "project": "p"}}
//
// When gcp.credentialsFile is set, a service-account credentials file whose
// token_uri points at this fake is written there (for
// GOOGLE_APPLICATION_CREDENTIALS). Once both listeners are up, the ready file
// is written atomically as {"aws": URL, "gcp": URL}. It serves until SIGINT
// or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mcp-switchboard/switchboard/secrets/internal/fakecloud"
)

type seed struct {
	AWS struct {
		AccessKeyID     string            `json:"accessKeyId"`
		SecretAccessKey string            `json:"secretAccessKey"`
		SessionToken    string            `json:"sessionToken"`
		Secrets         map[string]string `json:"secrets"`
	} `json:"aws"`
	GCP struct {
		Token           string            `json:"token"`
		Secrets         map[string]string `json:"secrets"`
		CredentialsFile string            `json:"credentialsFile"`
		Project         string            `json:"project"`
	} `json:"gcp"`
}

func main() {
	seedPath := flag.String("seed", "", "JSON seed file (required)")
	ready := flag.String("ready", "", "file to write the listener URLs to (required)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *seedPath, *ready); err != nil {
		fmt.Fprintln(os.Stderr, "fakecloud:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done.
func run(ctx context.Context, seedPath, ready string) error {
	if seedPath == "" || ready == "" {
		return errors.New("-seed and -ready are required")
	}
	b, err := os.ReadFile(seedPath)
	if err != nil {
		return err
	}
	var s seed
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	awsFake := fakecloud.NewAWS(s.AWS.Secrets, aws.Credentials{
		AccessKeyID: s.AWS.AccessKeyID, SecretAccessKey: s.AWS.SecretAccessKey, SessionToken: s.AWS.SessionToken,
	})
	gcpFake := fakecloud.NewGCP(s.GCP.Secrets, s.GCP.Token)

	awsURL, awsSrv, err := serve(awsFake)
	if err != nil {
		return err
	}
	defer awsSrv.Close()
	gcpURL, gcpSrv, err := serve(gcpFake)
	if err != nil {
		return err
	}
	defer gcpSrv.Close()

	if s.GCP.CredentialsFile != "" {
		sa, err := fakecloud.NewServiceAccount("fakecloud@" + s.GCP.Project + ".iam.gserviceaccount.com")
		if err != nil {
			return err
		}
		gcpFake.Trust(sa)
		if err := writeAtomic(s.GCP.CredentialsFile, sa.JSON(s.GCP.Project, gcpURL+"/token")); err != nil {
			return err
		}
	}
	out, _ := json.Marshal(map[string]string{"aws": awsURL, "gcp": gcpURL})
	if err := writeAtomic(ready, out); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func serve(h http.Handler) (string, *http.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv, nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fakecloud-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
