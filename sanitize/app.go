package sanitize

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// appMIMEType is the MIME type of an MCP Apps UI resource.
const appMIMEType = "text/html;profile=mcp-app"

// IsApp reports whether c is an MCP Apps UI resource (a ui:// URI or the
// text/html;profile=mcp-app MIME type). Such a resource is not content a
// model reads: the host renders it in a sandbox, and it must reach the
// host byte for byte. It passes no boundary; CheckApp checks it instead.
func IsApp(c *mcp.ResourceContents) bool {
	if c == nil {
		return false
	}
	if strings.HasPrefix(strings.ToLower(c.URI), "ui://") {
		return true
	}
	mt := strings.ToLower(strings.ReplaceAll(c.MIMEType, " ", ""))
	return mt == appMIMEType
}

// AppSecretError refuses a UI resource that contains a configured secret:
// it cannot be redacted without altering the page, so it is not served.
type AppSecretError struct {
	Server, URI string
}

func (e *AppSecretError) Error() string {
	return fmt.Sprintf("server '%s' serves UI resource %s, which contains a configured secret: refused", e.Server, e.URI)
}

// CheckApp checks the UI resources among contents without rewriting
// them: each blob within MaxMediaBytes, all of them together within
// MaxResultBytes, and none of them (text, blob or _meta) holding a
// secret the Redactor knows. It returns a *SizeError or an
// *AppSecretError, or nil when the resources may pass as they are.
func CheckApp(contents []*mcp.ResourceContents, server string, opt Options) error {
	var total int64
	for i, c := range contents {
		if !IsApp(c) {
			continue
		}
		n := int64(len(c.Text)) + int64(len(c.Blob))
		if c.Blob != nil && opt.MaxMediaBytes > 0 && int64(len(c.Blob)) > opt.MaxMediaBytes {
			return &SizeError{What: "blob contents[" + strconv.Itoa(i) + "]", Size: int64(len(c.Blob)), Limit: opt.MaxMediaBytes}
		}
		if total += n; opt.MaxResultBytes > 0 && total > opt.MaxResultBytes {
			return &SizeError{What: "result", Size: total, Limit: opt.MaxResultBytes}
		}
		if opt.Redactor == nil {
			continue
		}
		meta, _ := json.Marshal(c.Meta)
		for _, s := range []string{c.Text, string(c.Blob), string(meta), c.URI} {
			if s != "" && opt.Redactor.Redact(s) != s {
				return &AppSecretError{Server: server, URI: c.URI}
			}
		}
	}
	return nil
}
