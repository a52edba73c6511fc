package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

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
	if ok, err := l.d.TableExists(ctx, q, l.prefix+"quickcheck"); err != nil || !ok {
		return "", "", err
	}
	err = q.QueryRowContext(ctx, l.q(`SELECT digest, coalesce(content_digest, '') FROM `+l.prefix+`quickcheck WHERE host = ? AND path = ?
		AND size = ? AND mtime_ns = ? AND ctime_ns = ? AND inode = ? AND device = ?`),
		st.Host, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device)).Scan(&stored, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read quick check: %w", err)
	}
	return stored, content, nil
}

// RememberDigest records that the file described by st hashed to stored
// (its bytes as stored) and content (its decoded data).
func (l *Ledger) RememberDigest(ctx context.Context, q Querier, st FileStat, stored, content string) error {
	_, err := q.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`quickcheck
		(host, path, size, mtime_ns, ctime_ns, inode, device, digest, content_digest, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, `+l.d.Now()+`)
		ON CONFLICT (host, path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns,
		inode = excluded.inode, device = excluded.device, digest = excluded.digest, content_digest = excluded.content_digest,
		checked_at = excluded.checked_at`),
		st.Host, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device), stored, content)
	if err != nil {
		return fmt.Errorf("record quick check: %w", err)
	}
	return nil
}

// ContentOf returns the decoded data's digest recorded with a file whose
// stored bytes hashed to stored (on any host, at any path: the same bytes
// decode to the same data), or "" when none was recorded.
func (l *Ledger) ContentOf(ctx context.Context, q Querier, stored string) (string, error) {
	if ok, err := l.d.TableExists(ctx, q, l.prefix+"quickcheck"); err != nil || !ok {
		return "", err
	}
	var content string
	err := q.QueryRowContext(ctx, l.q(`SELECT content_digest FROM `+l.prefix+`quickcheck
		WHERE digest = ? AND content_digest IS NOT NULL LIMIT 1`), stored).Scan(&content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read quick check: %w", err)
	}
	return content, nil
}

// StoredOf returns the distinct stored digests of the files recorded as
// decoding to content (on any host, at any path), at most 16 of them.
func (l *Ledger) StoredOf(ctx context.Context, q Querier, content string) ([]string, error) {
	if ok, err := l.d.TableExists(ctx, q, l.prefix+"quickcheck"); err != nil || !ok {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, l.q(`SELECT DISTINCT digest FROM `+l.prefix+`quickcheck
		WHERE content_digest = ? AND digest <> content_digest LIMIT 16`), content)
	if err != nil {
		return nil, fmt.Errorf("read quick check: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
