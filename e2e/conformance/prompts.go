package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	simplePromptName   = "test_simple_prompt"
	argsPromptName     = "test_prompt_with_arguments"
	resourcePromptName = "test_prompt_with_embedded_resource"
	imagePromptName    = "test_prompt_with_image"
)

func addPrompts(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "Asks for context (input_required) before it is given."}, mrtrPrompt)
	srv.AddPrompt(&mcp.Prompt{
		Name: simplePromptName, Title: "Simple prompt",
		Description: "A prompt without arguments",
	}, simplePrompt)
	srv.AddPrompt(&mcp.Prompt{
		Name: argsPromptName, Title: "Prompt with arguments",
		Description: "A prompt that substitutes its two arguments",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
	}, argsPrompt)
	srv.AddPrompt(&mcp.Prompt{
		Name: resourcePromptName, Title: "Prompt with an embedded resource",
		Description: "A prompt that embeds the resource it is given",
		Arguments: []*mcp.PromptArgument{
			{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
		},
	}, resourcePrompt)
	srv.AddPrompt(&mcp.Prompt{
		Name: imagePromptName, Title: "Prompt with an image",
		Description: "A prompt that carries image content",
	}, imagePrompt)
}

func user(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }

func simplePrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{
		Description: "A simple prompt",
		Messages:    []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})},
	}, nil
}

func argsPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	a := req.Params.Arguments
	for _, name := range []string{"arg1", "arg2"} {
		if _, ok := a[name]; !ok {
			return nil, invalidParams("missing required argument %q", name)
		}
	}
	return &mcp.GetPromptResult{
		Description: "A prompt with arguments",
		Messages: []*mcp.PromptMessage{user(&mcp.TextContent{
			Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]),
		})},
	}, nil
}

func resourcePrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	uri, ok := req.Params.Arguments["resourceUri"]
	if !ok || uri == "" {
		return nil, invalidParams("missing required argument %q", "resourceUri")
	}
	return &mcp.GetPromptResult{
		Description: "A prompt with an embedded resource",
		Messages: []*mcp.PromptMessage{
			user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: uri, MIMEType: "text/plain", Text: "Embedded resource content for testing.",
			}}),
			user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
		},
	}, nil
}

func imagePrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{
		Description: "A prompt with an image",
		Messages: []*mcp.PromptMessage{
			user(&mcp.ImageContent{Data: redPixelPNG, MIMEType: "image/png"}),
			user(&mcp.TextContent{Text: "Please analyze the image above."}),
		},
	}, nil
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// completions holds the candidate values of every completable argument,
// keyed by "ref/prompt:NAME" or "ref/resource:URI-TEMPLATE", then by
// argument name.
var completions = map[string]map[string][]string{
	"ref/prompt:" + argsPromptName: {
		"arg1": {"paris", "park", "party", "testValue1"},
		"arg2": {"world", "wonder", "testValue2"},
	},
	"ref/prompt:" + resourcePromptName: {
		"resourceUri": {staticTextURI, staticBinaryURI, watchedURI, "test://example-resource"},
	},
	"ref/resource:" + templateURI: {
		"id": {"123", "456", "789"},
	},
}

// complete answers completion/complete with the candidates that start with
// the typed value (case-insensitively). values is always an array, possibly
// empty.
func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	key := ref.Type + ":" + ref.Name
	if ref.Type == "ref/resource" {
		key = ref.Type + ":" + ref.URI
	}
	args, ok := completions[key]
	if !ok {
		switch key {
		case "ref/prompt:" + simplePromptName, "ref/prompt:" + imagePromptName:
			// Known prompts without arguments.
		default:
			return nil, invalidParams("unknown completion reference %s", key)
		}
	}
	values := []string{}
	prefix := strings.ToLower(req.Params.Argument.Value)
	for _, v := range args[req.Params.Argument.Name] {
		if strings.HasPrefix(strings.ToLower(v), prefix) {
			values = append(values, v)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}
