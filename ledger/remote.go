package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// RemoteStat is what the remote quick check compares: an object at URL
// whose ETag, version id and size are all as they were is taken to hold
// the same bytes. An object without an ETag or version id is never taken
// to be unchanged.
type RemoteStat struct {
	URL     string // credentials masked
	ETag    string
	Version string
	Size    int64
}

// KnownRemote returns the digests recorded for the object st describes: of
// its bytes as stored and of its decoded data; both are "" when the object
// is unknown, has changed since, or has no validator to compare. A st
// without a version id (a listing names none) matches whatever version id
// was recorded with the same ETag and size: the caller gives an ETag only
// when it is strong, and a strong ETag and the size pin the bytes.
func (l *Ledger) KnownRemote(ctx context.Context, q Querier, st RemoteStat) (stored, content string, err error) {
	if st.ETag == "" && st.Version == "" {
		return "", "", nil
	}
	if ok, err := l.d.TableExists(ctx, q, l.prefix+"remote"); err != nil || !ok {
		return "", "", err
	}
	err = q.QueryRowContext(ctx, l.q(`SELECT digest, content_digest FROM `+l.prefix+`remote
		WHERE url = ? AND etag = ? AND (version_id = ? OR ? = '') AND size = ?`), st.URL, st.ETag, st.Version, st.Version, st.Size).Scan(&stored, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read remote quick check: %w", err)
	}
	return stored, content, nil
}

// RememberRemote records that the object st describes hashed to stored
// (its bytes) and content (its decoded data), replacing what was recorded
// for its URL. An object without an ETag or version id is not recorded.
func (l *Ledger) RememberRemote(ctx context.Context, q Querier, st RemoteStat, stored, content string) error {
	if st.ETag == "" && st.Version == "" {
		return nil
	}
	_, err := q.ExecContext(ctx, l.q(`INSERT INTO `+l.prefix+`remote
		(url, etag, version_id, size, digest, content_digest, checked_at) VALUES (?, ?, ?, ?, ?, ?, `+l.d.Now()+`)
		ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, version_id = excluded.version_id, size = excluded.size,
		digest = excluded.digest, content_digest = excluded.content_digest, checked_at = excluded.checked_at`),
		st.URL, st.ETag, st.Version, st.Size, stored, content)
	if err != nil {
		return fmt.Errorf("record remote quick check: %w", err)
	}
	return nil
}
