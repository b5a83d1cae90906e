package fakecloud

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// TestAccount is the account ID in the fake's ARNs.
const TestAccount = "000000000000"

// AWS is a fake AWS Secrets Manager: GetSecretValue only.
type AWS struct {
	creds aws.Credentials

	mu      sync.Mutex
	secrets map[string]*awsSecret
	calls   int
}

type awsSecret struct {
	str     *string
	bin     []byte
	version int
}

// NewAWS returns a fake holding secrets (name → SecretString) that accepts
// requests signed with creds.
func NewAWS(secrets map[string]string, creds aws.Credentials) *AWS {
	a := &AWS{creds: creds, secrets: map[string]*awsSecret{}}
	for k, v := range secrets {
		a.Put(k, v)
	}
	return a
}

// Put stores a new version of the string secret name.
func (a *AWS) Put(name, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.secrets[name]
	if s == nil {
		s = &awsSecret{}
		a.secrets[name] = s
	}
	s.str, s.bin = &value, nil
	s.version++
}

// PutBinary stores a new version of the binary secret name.
func (a *AWS) PutBinary(name string, value []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.secrets[name]
	if s == nil {
		s = &awsSecret{}
		a.secrets[name] = s
	}
	s.str, s.bin = nil, append([]byte(nil), value...)
	s.version++
}

// Calls returns how many GetSecretValue requests passed authentication.
func (a *AWS) Calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

func arn(region, name string) string {
	return fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-AbCdEf", region, TestAccount, name)
}

// ServeHTTP implements http.Handler.
func (a *AWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		awsError(w, 400, "SerializationException", "cannot read body")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		awsError(w, 404, "UnknownOperationException", "")
		return
	}
	region, status, code, msg := a.verify(r, body)
	if code != "" {
		awsError(w, status, code, msg)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		awsError(w, 400, "SerializationException", "unexpected content type "+ct)
		return
	}
	if t := r.Header.Get("X-Amz-Target"); t != "secretsmanager.GetSecretValue" {
		awsError(w, 400, "UnknownOperationException", "unknown operation "+t)
		return
	}
	var in struct {
		SecretId     string
		VersionId    string
		VersionStage string
	}
	if err := json.Unmarshal(body, &in); err != nil || in.SecretId == "" {
		awsError(w, 400, "InvalidParameterException", "SecretId is required")
		return
	}

	a.mu.Lock()
	a.calls++
	name := in.SecretId
	if strings.HasPrefix(name, "arn:") {
		for n := range a.secrets {
			if arn(region, n) == name {
				name = n
			}
		}
	}
	s := a.secrets[name]
	var out map[string]any
	if s != nil {
		out = map[string]any{
			"ARN":           arn(region, name),
			"Name":          name,
			"VersionId":     fmt.Sprintf("00000000-0000-4000-8000-%012d", s.version),
			"VersionStages": []string{"AWSCURRENT"},
			"CreatedDate":   float64(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()),
		}
		if s.str != nil {
			out["SecretString"] = *s.str
		} else {
			out["SecretBinary"] = s.bin // base64 in JSON, as the service sends it
		}
	}
	a.mu.Unlock()
	if out == nil {
		awsError(w, 400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", "fake-request")
	_ = json.NewEncoder(w).Encode(out)
}

// verify checks the request's SigV4 Authorization header by signing a copy
// of the request again with the known credentials. It returns the signed
// region, or an error code.
func (a *AWS) verify(r *http.Request, body []byte) (region string, status int, code, msg string) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "", 400, "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	fields, ok := parseAuthorization(auth)
	if !ok {
		return "", 400, "IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters."
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return "", 400, "IncompleteSignatureException", "malformed credential scope"
	}
	if scope[0] != a.creds.AccessKeyID {
		return "", 400, "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	region, service := scope[2], scope[3]
	if service != "secretsmanager" {
		return "", 400, "InvalidSignatureException", "Credential should be scoped to correct service: 'secretsmanager'."
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "", 400, "IncompleteSignatureException", "missing or malformed X-Amz-Date"
	}
	if d := time.Since(when); d > 15*time.Minute || d < -15*time.Minute {
		return "", 400, "InvalidSignatureException", "Signature expired"
	}
	if a.creds.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != a.creds.SessionToken {
		return "", 400, "UnrecognizedClientException", "The security token included in the request is invalid."
	}

	cp, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return "", 400, "InvalidSignatureException", "cannot rebuild request"
	}
	cp.Host = r.Host
	cp.ContentLength = int64(len(body))
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		cp.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(r.Context(), a.creds, cp, hex.EncodeToString(sum[:]), service, region, when); err != nil {
		return "", 400, "InvalidSignatureException", "cannot sign"
	}
	if cp.Header.Get("Authorization") != auth {
		return "", 400, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
	}
	return region, 0, "", ""
}

// parseAuthorization splits "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…,
// Signature=…".
func parseAuthorization(h string) (map[string]string, bool) {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, false
		}
		out[k] = v
	}
	return out, out["Credential"] != "" && out["SignedHeaders"] != "" && out["Signature"] != ""
}

func awsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "Message": msg})
}
