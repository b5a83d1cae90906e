package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/mcp-switchboard/switchboard/proxy/view"
)

// patternWhy says in a few words what each detection pattern caught
// (docs/security.md, Detection, has the full table).
var patternWhy = map[string]string{
	"marker-spoof":         "a look-alike of switchboard's boundary marker",
	"role-tag":             "a Human:/Assistant:/System: line, or a <system> or <IMPORTANT> tag",
	"chat-template":        "chat-template or tool-calling tokens",
	"ignore-previous":      `"ignore previous instructions" or a relative`,
	"fake-system":          "a fake system notice or jailbreak",
	"tool-instruction":     "text telling the model to call a tool or act behind the user's back",
	"exfiltration":         "a request to send secrets or the conversation somewhere",
	"exfil-link":           "an image URL with a slot for data",
	"hidden-unicode":       "invisible characters",
	"tag-chars":            "Unicode tag characters",
	"zero-width-run":       "a run of zero-width characters",
	"bidi-override":        "bidi override characters",
	"base64-run":           "base64 that decodes to text with findings",
	"hidden-markup":        "hidden markup that speaks to a model",
	"hidden-in-identifier": "a name holding invisible or control characters",
}

// printFindings prints, after the tool table, each definition the trust
// boundary withheld (onSuspicious block), flagged or could not publish:
// which server and tool, which patterns in which parts of it, and what
// each pattern catches. It returns how many it withheld or skipped.
func printFindings(w io.Writer, findings []view.FindingStatus) int {
	missing := 0
	for _, f := range findings {
		what := "suspicious, published"
		switch {
		case f.Skipped != "":
			missing++
			fmt.Fprintf(w, "%s: %s %s skipped: %s\n", f.Server, f.Kind, f.Name, oneLine(f.Skipped, 200))
			continue
		case f.Blocked:
			missing++
			what = "withheld (onSuspicious: block)"
		}
		fmt.Fprintf(w, "%s: %s %s %s: %s in %s\n", f.Server, f.Kind, f.Name, what, strings.Join(f.Patterns, ", "), strings.Join(f.Places, ", "))
		for _, id := range f.Patterns {
			if why := patternWhy[id]; why != "" {
				fmt.Fprintf(w, "  %s: %s\n", id, why)
			}
		}
	}
	return missing
}
