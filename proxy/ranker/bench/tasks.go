package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Task is one labelled request.
type Task struct {
	Request string
	Steps   []Step
}

// Step is one thing a request needs: the query an agent would search for
// it, and the public names of the tools that answer it (any one will do).
type Step struct {
	Query string   `json:"query"`
	Tools []string `json:"tools"`
}

// line is one line of a labelled file, in any of its forms.
type line struct {
	Request string   `json:"request"`
	Steps   []Step   `json:"steps"`
	Tools   []string `json:"tools"`
	Q       string   `json:"q"`
	Server  string   `json:"server"`
	Tool    string   `json:"tool"`
}

// ReadFile reads the labelled file at path.
func ReadFile(path string) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a labelled file from r; name is how errors name it.
func Read(r io.Reader, name string) ([]Task, error) {
	var tasks []Task
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		t, err := parseLine([]byte(text))
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, n, err)
		}
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: no labelled requests", name)
	}
	return tasks, nil
}

func parseLine(b []byte) (Task, error) {
	var l line
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Task{}, fmt.Errorf("not a labelled request: %v", err)
	}
	switch {
	case l.Q != "":
		if l.Server == "" || l.Tool == "" {
			return Task{}, fmt.Errorf(`"q" needs "server" and "tool"`)
		}
		return Task{Request: l.Q, Steps: []Step{{Query: l.Q, Tools: []string{"mcp_" + l.Server + "_" + l.Tool}}}}, nil
	case strings.TrimSpace(l.Request) == "":
		return Task{}, fmt.Errorf(`"request" is missing or empty`)
	case len(l.Steps) > 0 && len(l.Tools) > 0:
		return Task{}, fmt.Errorf(`has both "steps" and "tools": use one`)
	case len(l.Steps) > 0:
		for i, s := range l.Steps {
			if strings.TrimSpace(s.Query) == "" {
				return Task{}, fmt.Errorf("step %d: \"query\" is missing or empty", i+1)
			}
			if len(s.Tools) == 0 {
				return Task{}, fmt.Errorf("step %d: \"tools\" is empty: name the tools that answer it", i+1)
			}
		}
		return Task{Request: l.Request, Steps: l.Steps}, nil
	case len(l.Tools) > 0:
		t := Task{Request: l.Request}
		for _, name := range l.Tools {
			t.Steps = append(t.Steps, Step{Query: l.Request, Tools: []string{name}})
		}
		return t, nil
	}
	return Task{}, fmt.Errorf(`names no tool: give "tools" or "steps"`)
}
