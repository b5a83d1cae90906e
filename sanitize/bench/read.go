package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The labels a sample may carry.
const (
	LabelInjection = "injection"
	LabelBenign    = "benign"
)

// Sample is one labelled text.
type Sample struct {
	Text   string `json:"text"`
	Label  string `json:"label"`
	Family string `json:"family"`
	Line   int    `json:"-"` // its line in the file, from 1
}

// Injection reports whether s is labelled an injection.
func (s Sample) Injection() bool { return s.Label == LabelInjection }

// maxLine caps a line of a labelled file (a sample and its JSON escapes).
const maxLine = 4 << 20

// ReadFile reads the labelled file at path.
func ReadFile(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a labelled file from r; name is how errors name it. It fails
// on the first line that is not a sample, and on a file with no sample.
func Read(r io.Reader, name string) ([]Sample, error) {
	var out []Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseLine([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		s.Line = n
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d bytes", name, maxLine)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no sample (want one JSON object a line: text, label, family)", name)
	}
	return out, nil
}

func parseLine(b []byte) (Sample, error) {
	var s Sample
	if err := json.Unmarshal(b, &s); err != nil {
		return Sample{}, fmt.Errorf("not a JSON object with text, label and family: %v", err)
	}
	switch {
	case strings.TrimSpace(s.Text) == "":
		return Sample{}, errors.New("no text")
	case s.Label != LabelInjection && s.Label != LabelBenign:
		return Sample{}, fmt.Errorf("label %q: want %q or %q", s.Label, LabelInjection, LabelBenign)
	}
	return s, nil
}
