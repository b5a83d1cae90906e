// Package bench scores the detection of sanitize on a labelled set: the
// figures of `switchboard bench detect` and of docs/security.md.
//
// A labelled file holds one sample a line, as JSON:
//
//	{"text": "…", "label": "injection", "family": "override"}
//	{"text": "…", "label": "benign", "family": "email"}
//
// label is "injection" or "benign"; family is optional and only groups the
// samples in the second table. Blank lines and lines starting with # are
// skipped; other fields are ignored, so a converter may keep where each
// sample came from.
//
// Score passes each text through the paths switchboard itself uses, one
// channel each: as a tool result's text content and as a string inside
// its structuredContent (sanitize.ToolResult, the detection corpus of
// sanitize/testdata/detect does the same), and as a tool's description
// (sanitize.Tool, as a catalog is ingested). A sample is flagged on a
// channel when that path reports any finding, and withheld when block
// mode would withhold it: the result replaced by an error, the tool left
// out of the catalog (sanitize.Withholds).
package bench
