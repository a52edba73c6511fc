package ledger

import (
	"context"
	"database/sql"

	"github.com/idemport/idemport/idemtype"
)

// Filter selects operations for List. Empty fields select everything.
type Filter struct {
	Table  string
	FileID string
	State  State
	Digest string // content digest
	// Path selects operations last seen under this path or attempted under
	// it: a file is found by a name it had even after it was moved away.
	Path string
	// FileIDPrefix selects operations whose file ID starts with it.
	FileIDPrefix string
}

// List returns the operations matching f, newest first. A ledger whose
// tables do not exist has none.
func (l *Ledger) List(ctx context.Context, f Filter) ([]Operation, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"operations"); err != nil || !ok {
		return nil, err
	}
	replaces, err := l.hasReplaceCols(ctx)
	if err != nil {
		return nil, err
	}
	return l.ops.List(ctx, l.db, f, replaces)
}

// AttemptRecord is a stored attempt.
type AttemptRecord struct {
	Attempt
	Key
	StartedAt   int64
	HeartbeatAt int64
	EndedAt     int64
	Outcome     string // empty while running (or when the process died)
	Error       string
	Rows        idemtype.Rows
	Partitions  idemtype.Partitions // Total is not stored; Skipped and Committed are
	Recovered   int64               // leases recovered
	// Deleted is how many rows its snapshot sweep removed.
	Deleted int64
	// SchemaChanges says which columns it added or widened (--evolve).
	SchemaChanges string
}

// Attempts returns the attempts on operation k, oldest first.
func (l *Ledger) Attempts(ctx context.Context, k Key) ([]AttemptRecord, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"attempts"); err != nil || !ok {
		return nil, err
	}
	return l.ops.Attempts(ctx, l.db, k)
}

// Reject is a bad row kept in the quarantine under its original identity.
type Reject struct {
	// The bad row: its Value at most 1 KiB, its Row at most 64 KiB and
	// empty when longer, its Fields empty when longer or stored by an
	// older version.
	idemtype.Reject
	Attempt    string // the attempt that found it
	ReplayedBy string // the replay attempt that applied a corrected row, if any
	ReplayedAt int64
}

// rejectsPerInsert is how many rejects one INSERT stores: a file admitted
// with a million bad rows takes thousands of statements, not a million.
const rejectsPerInsert = 128

// AddRejects stores rejects of operation k found by attempt. Storing a
// reject twice keeps the first.
func (l *Ledger) AddRejects(ctx context.Context, tx *sql.Tx, k Key, attempt string, rs []Reject) error {
	for start := 0; start < len(rs); start += rejectsPerInsert {
		if err := l.ops.StoreRejects(ctx, tx, k, attempt, rs[start:min(start+rejectsPerInsert, len(rs))]); err != nil {
			return err
		}
	}
	return nil
}

// Rejects returns the stored rejects of operation k in ordinal order.
func (l *Ledger) Rejects(ctx context.Context, q Querier, k Key) ([]Reject, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"rejects"); err != nil || !ok {
		return nil, err
	}
	return l.ops.Rejects(ctx, q, k)
}
