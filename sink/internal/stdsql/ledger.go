package stdsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

// Ledger implements ledger.Ops in the SQL S spells, on the tables Prefix
// places. The value is safe for concurrent use.
type Ledger struct {
	S      Spelling
	Prefix string
}

var _ ledger.Ops = Ledger{}

func (l Ledger) q(x string) string { return l.S.Rebind(x) }

// QuickCheck implements ledger.Ops.
func (l Ledger) QuickCheck(ctx context.Context, q idemtype.Querier, st ledger.FileStat) (stored, content string, found bool, err error) {
	err = q.QueryRowContext(ctx, l.q(`SELECT digest, coalesce(content_digest, '') FROM `+l.Prefix+`quickcheck WHERE host = ? AND path = ?
		AND size = ? AND mtime_ns = ? AND ctime_ns = ? AND inode = ? AND device = ?`),
		st.Host, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device)).Scan(&stored, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("read quick check: %w", err)
	}
	return stored, content, true, nil
}

// RememberQuickCheck implements ledger.Ops.
func (l Ledger) RememberQuickCheck(ctx context.Context, q idemtype.Querier, st ledger.FileStat, stored, content string) error {
	_, err := q.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`quickcheck
		(host, path, size, mtime_ns, ctime_ns, inode, device, digest, content_digest, checked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, `+l.S.Now()+`)
		ON CONFLICT (host, path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns,
		inode = excluded.inode, device = excluded.device, digest = excluded.digest, content_digest = excluded.content_digest,
		checked_at = excluded.checked_at`),
		st.Host, st.Path, st.Size, st.MtimeNs, st.CtimeNs, int64(st.Inode), int64(st.Device), stored, content)
	if err != nil {
		return fmt.Errorf("record quick check: %w", err)
	}
	return nil
}

// QuickCheckContent implements ledger.Ops.
func (l Ledger) QuickCheckContent(ctx context.Context, q idemtype.Querier, stored string) (content string, found bool, err error) {
	err = q.QueryRowContext(ctx, l.q(`SELECT content_digest FROM `+l.Prefix+`quickcheck
		WHERE digest = ? AND content_digest IS NOT NULL LIMIT 1`), stored).Scan(&content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read quick check: %w", err)
	}
	return content, true, nil
}

// QuickCheckStored implements ledger.Ops.
func (l Ledger) QuickCheckStored(ctx context.Context, q idemtype.Querier, content string) ([]string, error) {
	rows, err := q.QueryContext(ctx, l.q(`SELECT DISTINCT digest FROM `+l.Prefix+`quickcheck
		WHERE content_digest = ? AND digest <> content_digest LIMIT 16`), content)
	if err != nil {
		return nil, fmt.Errorf("read quick check: %w", err)
	}
	return Strings(rows)
}

// Remote implements ledger.Ops.
func (l Ledger) Remote(ctx context.Context, q idemtype.Querier, st ledger.RemoteStat) (stored, content string, found bool, err error) {
	err = q.QueryRowContext(ctx, l.q(`SELECT digest, content_digest FROM `+l.Prefix+`remote
		WHERE url = ? AND etag = ? AND (version_id = ? OR ? = '') AND size = ?`), st.URL, st.ETag, st.Version, st.Version, st.Size).Scan(&stored, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("read remote quick check: %w", err)
	}
	return stored, content, true, nil
}

// RememberRemote implements ledger.Ops.
func (l Ledger) RememberRemote(ctx context.Context, q idemtype.Querier, st ledger.RemoteStat, stored, content string) error {
	_, err := q.ExecContext(ctx, l.q(`INSERT INTO `+l.Prefix+`remote
		(url, etag, version_id, size, digest, content_digest, checked_at) VALUES (?, ?, ?, ?, ?, ?, `+l.S.Now()+`)
		ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, version_id = excluded.version_id, size = excluded.size,
		digest = excluded.digest, content_digest = excluded.content_digest, checked_at = excluded.checked_at`),
		st.URL, st.ETag, st.Version, st.Size, stored, content)
	if err != nil {
		return fmt.Errorf("record remote quick check: %w", err)
	}
	return nil
}

// RejectedOrdinals implements ledger.Ops.
func (l Ledger) RejectedOrdinals(ctx context.Context, q idemtype.Querier, k ledger.Key, ordinals []int64) ([]int64, error) {
	args := []any{k.Table, k.FileID}
	for _, o := range ordinals {
		args = append(args, o)
	}
	rows, err := q.QueryContext(ctx, l.q(`SELECT ordinal FROM `+l.Prefix+`rejects WHERE table_name = ? AND file_id = ?
			AND ordinal IN (`+strings.TrimSuffix(strings.Repeat("?,", len(ordinals)), ",")+`)`), args...)
	if err != nil {
		return nil, fmt.Errorf("read rejects: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var o int64
		if err := rows.Scan(&o); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// MarkReplayed implements ledger.Ops.
func (l Ledger) MarkReplayed(ctx context.Context, tx *sql.Tx, k ledger.Key, attempt string, ordinals []int64) error {
	stmt, err := tx.PrepareContext(ctx, l.q(`UPDATE `+l.Prefix+`rejects SET replayed_by = ?, replayed_at = `+l.S.Now()+`
		WHERE table_name = ? AND file_id = ? AND ordinal = ?`))
	if err != nil {
		return fmt.Errorf("mark rejects replayed: %w", err)
	}
	defer stmt.Close()
	for _, o := range ordinals {
		if _, err := stmt.ExecContext(ctx, attempt, k.Table, k.FileID, o); err != nil {
			return fmt.Errorf("mark reject %d replayed: %w", o, err)
		}
	}
	return nil
}

// CountReplay implements ledger.Ops.
func (l Ledger) CountReplay(ctx context.Context, tx *sql.Tx, attempt string, r idemtype.Rows) error {
	if _, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`attempts SET rows_read = rows_read + ?, rows_inserted = rows_inserted + ?,
		rows_updated = rows_updated + ?, rows_unchanged = rows_unchanged + ?, rows_stale = rows_stale + ?,
		heartbeat_at = `+l.S.Now()+` WHERE attempt_id = ?`), r.Read, r.Inserted, r.Updated, r.Unchanged, r.Stale, attempt); err != nil {
		return fmt.Errorf("count replay: %w", err)
	}
	return nil
}

// DropRejectPayloads implements ledger.Ops.
func (l Ledger) DropRejectPayloads(ctx context.Context, tx *sql.Tx, k ledger.Key) (int64, error) {
	res, err := tx.ExecContext(ctx, l.q(`UPDATE `+l.Prefix+`rejects SET raw_value = NULL, raw_row = NULL, raw_fields = NULL
		WHERE table_name = ? AND file_id = ? AND (raw_value IS NOT NULL OR raw_row IS NOT NULL OR raw_fields IS NOT NULL)`), k.Table, k.FileID)
	if err != nil {
		return 0, fmt.Errorf("drop reject payloads: %w", err)
	}
	return res.RowsAffected()
}
