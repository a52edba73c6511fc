package reader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/idemport/idemport/idemtype"
)

// Digests are a file's two digests, each "sha256:" and a hex SHA-256.
type Digests struct {
	// Content is the digest of the file's decoded data (after gzip or
	// zstd): its identity, the same for a file and its compressed copies.
	// A compressed file whose stream is corrupt has no decoded data; its
	// Content is its Stored digest.
	Content string
	// Stored is the digest of the file's bytes as stored, which the quick
	// check remembers. It equals Content for an uncompressed file.
	Stored string
}

// HashText returns the digest text of h: "sha256:" and hex.
func HashText(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// Digest returns the digests of src's bytes, reading them once (a
// compressed file is decompressed once, as it is read). The compression
// is the one its name implies. progress, if set, is called with the bytes
// read from the source so far.
func Digest(ctx context.Context, src idemtype.Source, progress func(int64)) (Digests, error) {
	path := src.Name()
	f, err := src.Open(ctx, 0)
	if err != nil {
		return Digests{}, err
	}
	defer f.Close()
	stored := sha256.New()
	raw := &hashingReader{ctx: ctx, r: f, h: stored, progress: progress}
	_, comp, _ := Detect(path)
	if comp == None {
		if _, err := io.Copy(io.Discard, raw); err != nil {
			return Digests{}, fmt.Errorf("hash %s: %w", path, err)
		}
		d := HashText(stored)
		return Digests{Content: d, Stored: d}, nil
	}
	content := sha256.New()
	decodeErr := decodeInto(path, comp, raw, content)
	if err := raw.err; err != nil { // reading the file failed, not decoding it
		return Digests{}, fmt.Errorf("hash %s: %w", path, err)
	}
	if _, err := io.Copy(io.Discard, raw); err != nil { // bytes after the stream
		return Digests{}, fmt.Errorf("hash %s: %w", path, err)
	}
	d := Digests{Content: HashText(content), Stored: HashText(stored)}
	if decodeErr != nil {
		d.Content = d.Stored
	}
	return d, nil
}

// decodeInto decompresses raw into w.
func decodeInto(path string, comp Compression, raw io.Reader, w io.Writer) error {
	f := &File{path: path, comp: comp}
	s, err := f.decompress(raw)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = io.Copy(w, s)
	return err
}

// hashingReader hashes what is read through it, checking ctx between
// reads, and remembers a read error (as opposed to a decoding error).
type hashingReader struct {
	ctx      context.Context
	r        io.Reader
	h        hash.Hash
	n        int64
	progress func(int64)
	err      error
}

func (h *hashingReader) Read(p []byte) (int, error) {
	if err := h.ctx.Err(); err != nil {
		h.err = err
		return 0, err
	}
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if h.progress != nil && n > 0 {
		h.progress(h.n)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		h.err = err
	}
	return n, err
}
