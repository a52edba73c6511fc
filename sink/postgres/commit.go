package postgres

import (
	"context"
	"database/sql"
	"fmt"
)

// CommitLazily makes tx, a partition's transaction (or the claim's or
// the plan's, which the completion follows as it follows them), commit without
// waiting for its write-ahead log to reach the disk
// (synchronous_commit = off, for tx alone: SET LOCAL). The COMMIT returns
// once its record is in the log, and the server flushes it within three
// times wal_writer_delay, or sooner at any later commit that does wait:
// the log is flushed in its order, so the synchronous commit that
// completes the operation makes every partition committed before it
// durable. A crash of the server before then loses the partition's rows
// together with its done mark and counts (the same transaction, and the
// log replays a prefix of the commits), and the rerun applies it again.
// What a commit made visible before it was durable is acted on only by
// later transactions, whose commits follow it in the log: see
// docs/internals.md ("PostgreSQL: partition commits that do not wait for
// the disk") for why nothing outside the database acts on it. A transaction whose commit anything outside the
// database relies on (the completion, events, leases handed to others)
// must not call it.
func (Driver) CommitLazily(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		return fmt.Errorf("commit without waiting for the log's flush: %w", err)
	}
	return nil
}
