package upstream

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// levelWords maps the level names loggers write to hclog levels.
var levelWords = map[string]hclog.Level{
	"TRACE": hclog.Trace, "DEBUG": hclog.Debug,
	"INFO": hclog.Info, "NOTICE": hclog.Info,
	"WARN": hclog.Warn, "WARNING": hclog.Warn,
	"ERROR": hclog.Error, "ERR": hclog.Error, "FATAL": hclog.Error, "CRITICAL": hclog.Error,
	"CRIT": hclog.Error, "PANIC": hclog.Error, "ALERT": hclog.Error, "EMERG": hclog.Error,
}

var (
	ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	// logfmtLevel is slog's and logrus's text form: level=WARN.
	logfmtLevel = regexp.MustCompile(`(?i)(?:^|\s)(?:level|lvl|severity)="?([a-z]+)`)
)

// lineLevel is the level a line of a child's stderr names, or info when it
// names none: a stderr line is a server's log, not a problem by itself.
// It understands JSON logs (hclog's @level, pino's and bunyan's numbers,
// zap, slog, winston), logfmt (level=warn), a level word among the first
// few words in capitals, bracketed or not ("[WARN]", "2025-… INFO …",
// hclog's and Rust tracing's layouts), and a first word with a colon in
// any case ("Error: Cannot find module", Python's "WARNING:root:").
func lineLevel(s string) hclog.Level {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		if l, ok := jsonLevel(t); ok {
			return l
		}
	}
	if m := logfmtLevel.FindStringSubmatch(s); m != nil {
		if l, ok := levelWords[strings.ToUpper(m[1])]; ok {
			return l
		}
	}
	words := strings.Fields(ansiEscape.ReplaceAllString(s, ""))
	if len(words) > 0 {
		if w, ok := strings.CutSuffix(words[0], ":"); ok {
			if l, ok := levelWords[strings.ToUpper(w)]; ok {
				return l
			}
		}
		// Python's logging default: LEVEL:logger:message.
		if w, _, ok := strings.Cut(words[0], ":"); ok {
			if l, ok := levelWords[w]; ok {
				return l
			}
		}
	}
	for _, w := range words[:min(len(words), 4)] {
		if l, ok := levelWords[strings.Trim(w, "[]():,|")]; ok {
			return l
		}
	}
	return hclog.Info
}

// jsonLevel reads the level field of a JSON log line.
func jsonLevel(s string) (hclog.Level, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &fields) != nil {
		return hclog.NoLevel, false
	}
	for _, k := range []string{"@level", "level", "severity", "lvl", "log.level"} {
		raw, ok := fields[k]
		if !ok {
			continue
		}
		var name string
		if json.Unmarshal(raw, &name) == nil {
			l, ok := levelWords[strings.ToUpper(name)]
			return l, ok
		}
		// pino and bunyan: 10 trace, 20 debug, 30 info, 40 warn, 50 error,
		// 60 fatal.
		var n float64
		if json.Unmarshal(raw, &n) == nil {
			switch {
			case n <= 10:
				return hclog.Trace, true
			case n <= 20:
				return hclog.Debug, true
			case n <= 30:
				return hclog.Info, true
			case n <= 40:
				return hclog.Warn, true
			default:
				return hclog.Error, true
			}
		}
	}
	return hclog.NoLevel, false
}
