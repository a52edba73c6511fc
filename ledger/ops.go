package ledger

import "context"

// Ops are the ledger's database operations, implemented by the target
// database's driver (sink.Driver.Ledger) on idemport's tables as its
// migrations create them. Each runs its statements on the Querier it is
// given and wraps its errors with what it was doing; what a result means
// (a file unknown, an object without validators) is decided here, in
// Ledger. An Ops is safe for concurrent use.
//
// The ledger's operations move here area by area (issue 28); so far the
// local and remote quick checks.
type Ops interface {
	// QuickCheck returns the digests recorded for st, found false when
	// no row matches every field of st.
	QuickCheck(ctx context.Context, q Querier, st FileStat) (stored, content string, found bool, err error)
	// RememberQuickCheck records st with its digests, replacing the row
	// of st's host and path.
	RememberQuickCheck(ctx context.Context, q Querier, st FileStat, stored, content string) error
	// QuickCheckContent returns a content digest recorded with stored
	// (any host, any path), found false when none is.
	QuickCheckContent(ctx context.Context, q Querier, stored string) (content string, found bool, err error)
	// QuickCheckStored returns at most 16 distinct stored digests
	// recorded with content, other than content itself.
	QuickCheckStored(ctx context.Context, q Querier, content string) ([]string, error)
	// Remote returns the digests recorded for st's URL with st's ETag and
	// size, and st's version id unless st has none; found false when no
	// row matches.
	Remote(ctx context.Context, q Querier, st RemoteStat) (stored, content string, found bool, err error)
	// RememberRemote records st with its digests, replacing the row of
	// st's URL.
	RememberRemote(ctx context.Context, q Querier, st RemoteStat, stored, content string) error
}
