package ledger

import "context"

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
	if ok, err := l.exists(ctx, q, "remote"); err != nil || !ok {
		return "", "", err
	}
	stored, content, _, err = l.ops.Remote(ctx, q, st)
	return stored, content, err
}

// RememberRemote records that the object st describes hashed to stored
// (its bytes) and content (its decoded data), replacing what was recorded
// for its URL. An object without an ETag or version id is not recorded.
func (l *Ledger) RememberRemote(ctx context.Context, q Querier, st RemoteStat, stored, content string) error {
	if st.ETag == "" && st.Version == "" {
		return nil
	}
	return l.ops.RememberRemote(ctx, q, st, stored, content)
}
