package secrets

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

// AWSOptions configures AWS Secrets Manager access. The zero value uses the
// standard config chain (AWS_* environment, shared config and credentials
// files, web identity / IRSA, container and instance roles).
type AWSOptions struct {
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

type awsProvider struct {
	opt AWSOptions

	mu     sync.Mutex
	client *secretsmanager.Client
}

func newAWSProvider(opt AWSOptions) *awsProvider { return &awsProvider{opt: opt} }

func (p *awsProvider) close() {}

// clientFor loads the AWS config on first use. A failed load is not kept, so
// a later start retries it.
func (p *awsProvider) clientFor(ctx context.Context) (*secretsmanager.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		return p.client, nil
	}
	var lo []func(*config.LoadOptions) error
	if p.opt.Region != "" {
		lo = append(lo, config.WithRegion(p.opt.Region))
	}
	if p.opt.Credentials != nil {
		lo = append(lo, config.WithCredentialsProvider(p.opt.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("aws: config: %w", err)
	}
	p.client = secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if p.opt.Endpoint != "" {
			o.BaseEndpoint = aws.String(p.opt.Endpoint)
		}
	})
	return p.client, nil
}

func (p *awsProvider) fetch(ctx context.Context, ref Ref) (string, error) {
	c, err := p.clientFor(ctx)
	if err != nil {
		return "", err
	}
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(ref.Path)})
	if err != nil {
		return "", awsReason(ref.Path, err)
	}
	var raw string
	switch {
	case out.SecretString != nil:
		raw = *out.SecretString
	case out.SecretBinary != nil:
		raw = string(out.SecretBinary)
	default:
		return "", notFound("aws: %s has no value", ref.Path)
	}
	if ref.Field == "" {
		return raw, nil
	}
	return jsonKey(raw, ref.Field, "aws: "+ref.Path)
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
		return "", notFound("%s: key %q not found in the secret's JSON", what, key)
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

// awsReason reduces an SDK error to the service's error code and message.
func awsReason(name string, err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return &awsError{msg: fmt.Sprintf("aws: %s not found: %s", name, nf.ErrorMessage()), err: err, notFound: true}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return &awsError{msg: fmt.Sprintf("aws: get %s: %s: %s", name, ae.ErrorCode(), truncate(strings.TrimSpace(ae.ErrorMessage()), 300)), err: err}
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
