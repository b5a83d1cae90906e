package testutil

import "golang.org/x/tools/txtar"

// Sections maps the names of a golden archive's files to their bodies.
func Sections(ar *txtar.Archive) map[string]string {
	m := make(map[string]string, len(ar.Files))
	for _, f := range ar.Files {
		m[f.Name] = string(f.Data)
	}
	return m
}

// SetSection replaces the body of the file called name in ar, or adds the
// file at the end (a golden test's -update).
func SetSection(ar *txtar.Archive, name, body string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(body)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(body)})
}
