package reader

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
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
func HashText(h hash.Hash) string { return input.HashText(h) }

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
	raw := &input.HashingReader{Ctx: ctx, R: f, H: stored, Progress: progress}
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
	if err := raw.Err; err != nil { // reading the file failed, not decoding it
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
	f := &input.File{Path: path, Comp: comp}
	s, err := f.Decompress(raw)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = io.Copy(w, s)
	return err
}
