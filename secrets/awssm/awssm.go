package awssm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"
)

// ErrNotFound matches (with errors.Is) the errors that say a secret or a
// key of its JSON does not exist.
var ErrNotFound = errors.New("secret not found")

// Options configures AWS Secrets Manager access. The zero value uses the
// standard config chain (AWS_* environment, shared config and credentials
// files, web identity / IRSA, container and instance roles).
type Options struct {
	// Endpoint overrides the service endpoint (the client's BaseEndpoint).
	// Tests point it at a fake. If empty, the SDK resolves it (and honours
	// AWS_ENDPOINT_URL_SECRETS_MANAGER).
	Endpoint string
	// Region overrides the region. If empty, the config chain decides
	// (AWS_REGION, the shared config profile).
	Region string
	// Credentials overrides the credential chain. If nil, the chain is used.
	Credentials aws.CredentialsProvider
}

// Client reads secrets. Its SDK client is made on the first Fetch.
type Client struct {
	opt Options

	mu     sync.Mutex
	client *secretsmanager.Client
}

// New returns a Client. It reads no configuration and contacts nothing.
func New(opt Options) *Client { return &Client{opt: opt} }

// clientFor loads the AWS config on first use. A failed load is not kept, so
// a later fetch retries it.
func (c *Client) clientFor(ctx context.Context) (*secretsmanager.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		return c.client, nil
	}
	var lo []func(*config.LoadOptions) error
	if c.opt.Region != "" {
		lo = append(lo, config.WithRegion(c.opt.Region))
	}
	if c.opt.Credentials != nil {
		lo = append(lo, config.WithCredentialsProvider(c.opt.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("aws: config: %w", err)
	}
	c.client = secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if c.opt.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.opt.Endpoint)
		}
	})
	return c.client, nil
}

// Fetch returns the secret named by path (a name or an ARN): its string
// value, or its binary value as bytes. With key, the secret must be a JSON
// object and Fetch returns the key's value: a string as is, anything else
// JSON-encoded. Errors start with "aws: " and never quote the secret.
func (c *Client) Fetch(ctx context.Context, path, key string) (string, error) {
	sm, err := c.clientFor(ctx)
	if err != nil {
		return "", err
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(path)})
	if err != nil {
		return "", reason(path, err)
	}
	var raw string
	switch {
	case out.SecretString != nil:
		raw = *out.SecretString
	case out.SecretBinary != nil:
		raw = string(out.SecretBinary)
	default:
		return "", &awsError{msg: fmt.Sprintf("aws: %s has no value", path), notFound: true}
	}
	if key == "" {
		return raw, nil
	}
	return jsonKey(raw, key, "aws: "+path)
}

// jsonKey picks key from a JSON object secret: a string value as is, any
// other value JSON-encoded. Its errors never quote the secret (the decoder's
// own messages can).
func jsonKey(raw, key, what string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
		return "", fmt.Errorf("%s: #%s given but the secret is not a JSON object", what, key)
	}
	v, ok := obj[key]
	if !ok {
		return "", &awsError{msg: fmt.Sprintf("%s: key %q not found in the secret's JSON", what, key), notFound: true}
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v), nil
	}
	return b.String(), nil
}

// reason reduces an SDK error to the service's error code and message.
func reason(name string, err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return &awsError{msg: fmt.Sprintf("aws: %s not found: %s", name, nf.ErrorMessage()), err: err, notFound: true}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		msg := strings.TrimSpace(ae.ErrorMessage())
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return &awsError{msg: fmt.Sprintf("aws: get %s: %s: %s", name, ae.ErrorCode(), msg), err: err}
	}
	return fmt.Errorf("aws: get %s: %w", name, err)
}

// awsError keeps the SDK error for errors.As while printing a short reason.
type awsError struct {
	msg      string
	err      error
	notFound bool
}

func (e *awsError) Error() string { return e.msg }
func (e *awsError) Unwrap() error { return e.err }
func (e *awsError) Is(target error) bool {
	return e.notFound && target == ErrNotFound
}
