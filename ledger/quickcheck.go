package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemport/idemport/internal/dialect"
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

// KnownDigest returns the content digest recorded for st, or "" when the
// file is unknown or has changed in any way since.
func (l *Ledger) KnownDigest(ctx context.Context, q dialect.Querier, st FileStat) (string, error) {
	if ok, err := l.d.TableExists(ctx, q, l.prefix+"quickcheck"); err != nil || !ok {
		return "", err
	}
	var digest string
	err := q.QueryRowContext(ctx, l.q(`SELECT digest FROM `+l.prefix+`quickcheck WHERE host = ? AND path = ?
		AND size = ? AND mtime_ns = ? AND ctime_ns = ? AND inode = ? AND device = ?`),
		st.Host, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device)).Scan(&digest)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read quick check: %w", err)
	}
	return digest, nil
}

// RememberDigest records that the file described by st hashed to digest.
func (l *Ledger) RememberDigest(ctx context.Context, q dialect.Querier, st FileStat, digest string) error {
	_, err := q.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`quickcheck
		(host, path, size, mtime_ns, ctime_ns, inode, device, digest, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, `+l.d.Now()+`)
		ON CONFLICT (host, path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns,
		inode = excluded.inode, device = excluded.device, digest = excluded.digest, checked_at = excluded.checked_at`),
		st.Host, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device), digest)
	if err != nil {
		return fmt.Errorf("record quick check: %w", err)
	}
	return nil
}
