package secrets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// maxFileSize bounds what secret://file reads: a secret is small, and a
// reference to a large file (or a device) is a mistake that should not eat
// memory.
const maxFileSize = 1 << 20

func (r *Resolver) fetchEnv(ref Ref) (string, error) {
	v, ok := r.env(ref.Path)
	if !ok {
		return "", notFound("environment variable %s is not set", ref.Path)
	}
	return v, nil
}

// fetchFile reads a mounted secret (a Kubernetes Secret volume, a Vault Agent
// sink). Trailing newlines are trimmed because editors and `echo` add them
// and no credential ends in one. Errors name the path, never the content.
func fetchFile(ctx context.Context, ref Ref) (string, error) {
	f, err := os.Open(ref.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", notFound("file: %s does not exist", ref.Path)
		}
		return "", fmt.Errorf("file: %w", pathError(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("file: %w", pathError(err))
	}
	if st.IsDir() {
		return "", fmt.Errorf("file: %s is a directory", ref.Path)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return "", fmt.Errorf("file: %w", pathError(err))
	}
	if len(b) > maxFileSize {
		return "", fmt.Errorf("file: %s is larger than %d bytes", ref.Path, maxFileSize)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// pathError keeps the operation and path of an *fs.PathError; other errors
// pass unchanged (they carry no file content either).
func pathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, pe.Path, pe.Err)
	}
	return err
}
