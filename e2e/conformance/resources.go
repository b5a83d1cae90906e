package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	staticTextURI    = "test://static-text"
	staticTextBody   = "This is the content of the static text resource."
	staticBinaryURI  = "test://static-binary"
	templateURI      = "test://template/{id}/data"
	templatePrefix   = "test://template/"
	templateSuffix   = "/data"
	watchedURI       = "test://watched-resource"
	watchedBody      = "This resource is watched: subscribers are told when it changes."
	updateAfterDelay = 100 * time.Millisecond
)

func addResources(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{
		URI: staticTextURI, Name: "static-text", Title: "Static text",
		Description: "A static text resource", MIMEType: "text/plain",
	}, readStaticText)
	srv.AddResource(&mcp.Resource{
		URI: staticBinaryURI, Name: "static-binary", Title: "Static binary",
		Description: "A static binary resource (a 1x1 red PNG)", MIMEType: "image/png",
	}, readStaticBinary)
	srv.AddResource(&mcp.Resource{
		URI: watchedURI, Name: "watched-resource", Title: "Watched resource",
		Description: "A resource that can be subscribed to; subscribers get notifications/resources/updated", MIMEType: "text/plain",
	}, readWatched)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: templateURI, Name: "template", Title: "Template",
		Description: "A resource template: {id} is substituted into the content", MIMEType: "application/json",
	}, readTemplate)
}

func readStaticText(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "text/plain", Text: staticTextBody,
	}}}, nil
}

func readStaticBinary(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "image/png", Blob: redPixelPNG,
	}}}, nil
}

func readWatched(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "text/plain", Text: watchedBody,
	}}}, nil
}

// readTemplate answers test://template/{id}/data. The SDK only calls it for
// URIs that match the template.
func readTemplate(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	raw, ok := strings.CutPrefix(uri, templatePrefix)
	if ok {
		raw, ok = strings.CutSuffix(raw, templateSuffix)
	}
	if !ok || raw == "" || strings.Contains(raw, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	id, err := url.PathUnescape(raw)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	body := fmt.Sprintf(`{"id":%q,"templateTest":true,"data":%q}`, id, "Data for ID: "+id)
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: uri, MIMEType: "application/json", Text: body,
	}}}, nil
}

// subscriptions accepts resources/subscribe and resources/unsubscribe (the
// SDK keeps the subscriber list) and, shortly after a subscription to the
// watched resource, sends notifications/resources/updated for it, so that a
// client (or a proxy in between) can see the update arrive.
type subscriptions struct {
	srv *mcp.Server

	mu      sync.Mutex
	pending map[string]*time.Timer
}

func newSubscriptions() *subscriptions {
	return &subscriptions{pending: map[string]*time.Timer{}}
}

func (s *subscriptions) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if !knownResource(uri) {
		return mcp.ResourceNotFoundError(uri)
	}
	if uri != watchedURI {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.pending[uri]; t != nil {
		t.Stop()
	}
	s.pending[uri] = time.AfterFunc(updateAfterDelay, func() {
		s.mu.Lock()
		delete(s.pending, uri)
		s.mu.Unlock()
		// Sent to every session still subscribed to uri.
		_ = s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
	})
	return nil
}

func (s *subscriptions) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if !knownResource(req.Params.URI) {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	return nil
}

func knownResource(uri string) bool {
	switch uri {
	case staticTextURI, staticBinaryURI, watchedURI:
		return true
	}
	return strings.HasPrefix(uri, templatePrefix) && strings.HasSuffix(uri, templateSuffix)
}
