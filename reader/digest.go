package reader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Digest returns the content digest of the file at path: "sha256:" and the
// hex SHA-256 of its bytes as stored (compressed files are not decompressed).
// progress, if set, is called with the bytes hashed so far.
func Digest(ctx context.Context, path string, progress func(int64)) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		total += int64(n)
		if progress != nil && n > 0 {
			progress(total)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", path, err)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
