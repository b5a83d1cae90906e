package sanitize

import "github.com/modelcontextprotocol/go-sdk/mcp"

// JoinedRedactor is a Redactor that also redacts texts a reader takes one
// after the other as one text — the content blocks of one result, the
// messages of one prompt — so that a secret split across two of them is
// caught. The switchboard secret set implements it.
type JoinedRedactor interface {
	Redactor
	// RedactJoined returns parts redacted as their concatenation, each
	// part keeping what is not a secret; parts itself if nothing changed.
	RedactJoined(parts []string) []string
}

// redactAcross returns texts redacted as one text when r can, else texts.
func redactAcross(r Redactor, texts []string) []string {
	jr, ok := r.(JoinedRedactor)
	if !ok || len(texts) < 2 {
		return texts
	}
	return jr.RedactJoined(texts)
}

// acrossContents redacts the text items of contents as one text. It
// returns contents itself when nothing changed, else a copy holding new
// text items.
func acrossContents(r Redactor, contents []mcp.Content) []mcp.Content {
	if len(contents) < 2 {
		return contents // one block: nothing is split across blocks
	}
	var texts []string
	var at []int
	for i, c := range contents {
		if tc, ok := c.(*mcp.TextContent); ok && tc != nil {
			texts = append(texts, tc.Text)
			at = append(at, i)
		}
	}
	got := redactAcross(r, texts)
	if len(got) == 0 || &got[0] == &texts[0] {
		return contents
	}
	out := append([]mcp.Content(nil), contents...)
	for k, i := range at {
		if got[k] != texts[k] {
			tc := *contents[i].(*mcp.TextContent)
			tc.Text = got[k]
			out[i] = &tc
		}
	}
	return out
}

// acrossMessages is acrossContents for the messages of a prompt.
func acrossMessages(r Redactor, msgs []*mcp.PromptMessage) []*mcp.PromptMessage {
	contents := make([]mcp.Content, len(msgs))
	for i, m := range msgs {
		if m != nil {
			contents[i] = m.Content
		}
	}
	got := acrossContents(r, contents)
	if len(got) == 0 || &got[0] == &contents[0] {
		return msgs
	}
	out := append([]*mcp.PromptMessage(nil), msgs...)
	for i, c := range got {
		if msgs[i] != nil && c != msgs[i].Content {
			m := *msgs[i]
			m.Content = c
			out[i] = &m
		}
	}
	return out
}

// acrossResources is acrossContents for the text contents of a read.
func acrossResources(r Redactor, contents []*mcp.ResourceContents) []*mcp.ResourceContents {
	var texts []string
	var at []int
	for i, c := range contents {
		if c != nil && c.Blob == nil {
			texts = append(texts, c.Text)
			at = append(at, i)
		}
	}
	got := redactAcross(r, texts)
	if len(got) == 0 || &got[0] == &texts[0] {
		return contents
	}
	out := append([]*mcp.ResourceContents(nil), contents...)
	for k, i := range at {
		if got[k] != texts[k] {
			rc := *contents[i]
			rc.Text = got[k]
			out[i] = &rc
		}
	}
	return out
}
