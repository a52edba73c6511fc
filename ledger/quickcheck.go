package ledger

import "context"

// FileStat is what the quick check compares: a file whose path, size,
// modification and change times, inode and device are all as they were is
// taken to hold the same bytes. The change time cannot be set by users, so
// a rewrite that restores the modification time is still noticed.
type FileStat struct {
	Host    string
	Path    string // absolute
	Size    int64
	MtimeNs int64
	CtimeNs int64
	Inode   uint64
	Device  uint64
}

// KnownDigest returns the digests recorded for st: of the file's bytes as
// stored, and of its decoded data (content, "" when an older version
// recorded the row); both are "" when the file is unknown or has changed in
// any way since.
func (l *Ledger) KnownDigest(ctx context.Context, q Querier, st FileStat) (stored, content string, err error) {
	if ok, err := l.exists(ctx, q, "quickcheck"); err != nil || !ok {
		return "", "", err
	}
	stored, content, _, err = l.ops.QuickCheck(ctx, q, st)
	return stored, content, err
}

// RememberDigest records that the file described by st hashed to stored
// (its bytes as stored) and content (its decoded data).
func (l *Ledger) RememberDigest(ctx context.Context, q Querier, st FileStat, stored, content string) error {
	return l.ops.RememberQuickCheck(ctx, q, st, stored, content)
}

// ContentOf returns the decoded data's digest recorded with a file whose
// stored bytes hashed to stored (on any host, at any path: the same bytes
// decode to the same data), or "" when none was recorded.
func (l *Ledger) ContentOf(ctx context.Context, q Querier, stored string) (string, error) {
	if ok, err := l.exists(ctx, q, "quickcheck"); err != nil || !ok {
		return "", err
	}
	content, _, err := l.ops.QuickCheckContent(ctx, q, stored)
	return content, err
}

// StoredOf returns the distinct stored digests of the files recorded as
// decoding to content (on any host, at any path), at most 16 of them.
func (l *Ledger) StoredOf(ctx context.Context, q Querier, content string) ([]string, error) {
	if ok, err := l.exists(ctx, q, "quickcheck"); err != nil || !ok {
		return nil, err
	}
	return l.ops.QuickCheckStored(ctx, q, content)
}
