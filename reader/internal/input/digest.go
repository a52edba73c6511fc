package input

import (
	"context"
	"encoding/hex"
	"errors"
	"hash"
	"io"
)

// HashText returns the digest text of h: "sha256:" and hex.
func HashText(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// HashingReader hashes what is read through it, checking ctx between
// reads, and remembers a read error (as opposed to a decoding error).
type HashingReader struct {
	Ctx      context.Context
	R        io.Reader
	H        hash.Hash
	N        int64
	Progress func(int64)
	Err      error
}

func (h *HashingReader) Read(p []byte) (int, error) {
	if err := h.Ctx.Err(); err != nil {
		h.Err = err
		return 0, err
	}
	n, err := h.R.Read(p)
	h.H.Write(p[:n])
	h.N += int64(n)
	if h.Progress != nil && n > 0 {
		h.Progress(h.N)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		h.Err = err
	}
	return n, err
}
