package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

// Replace moves operation k, if there is one, to the past operations, so a
// new operation for k can be created in the same transaction. The past
// record keeps k's state when it is undone or abandoned; with by (the
// content digest of the version replacing it, --replace) a completed one
// becomes replaced, by that version; any other is superseded. Its
// quarantined rows go with it: they belonged to a file that is no longer
// k's.
//
// The record that it created k's table (Created, planned) goes with it
// too: the table now holds, or will hold, the rows of an operation that
// did not create it (the replacement, or an import after an undo that kept
// the table), whose undo or abandon must not drop it, with whatever else
// lives there. A record not yet planned stays: the next attempt drops that
// table before it plans, as a rollback of the attempt that made it would
// have. The records of its other tables (a staging table, a table of keys
// seen, which the new operation makes under the same names) stay, so that
// the new operation drops them when it is done with them.
func (l *Ledger) Replace(ctx context.Context, tx *sql.Tx, k Key, by string) error {
	if err := l.ops.MoveToPast(ctx, tx, k, by); err != nil {
		return err
	}
	created, err := l.ops.Created(ctx, tx, k)
	if err != nil {
		return err
	}
	for _, c := range created {
		if c.Name == k.Table && c.Planned {
			if err := l.ops.ForgetCreated(ctx, tx, k, c.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// MarkReplaces records that operation k, just created, replaces the
// completed version of its file ID whose content digest is digest
// (Operation.Replaces).
func (l *Ledger) MarkReplaces(ctx context.Context, tx *sql.Tx, k Key, digest string) error {
	return l.ops.MarkReplaces(ctx, tx, k, digest)
}

// Close sets operation k to state (Undone or Abandoned), ends any planning
// lease and drops its quarantined rows. Its identity and counters stay. A
// completed operation can be undone, never abandoned: Close to Abandoned
// fails with ErrCompleted, changing nothing.
func (l *Ledger) Close(ctx context.Context, tx *sql.Tx, k Key, state State) error {
	closed, err := l.ops.CloseOperation(ctx, tx, k, state, state == Undone)
	if err != nil {
		return err
	}
	if !closed && state != Undone {
		return fmt.Errorf("mark %s %s: %w", k, state, ErrCompleted)
	}
	return l.ops.DropRejects(ctx, tx, k)
}

// Record records a, an attempt that did its work within the caller's
// transaction (an undo), as started and ended with outcome.
func (l *Ledger) Record(ctx context.Context, tx *sql.Tx, k Key, a Attempt, outcome string) error {
	if err := l.insertAttempt(ctx, tx, k, a); err != nil {
		return err
	}
	return l.End(ctx, tx, a.ID, outcome, "", 0, 0)
}

// Reset prepares completed operation k to be applied again by a new
// attempt: it becomes processing with its counters at zero, keeping its
// stored plan; the rows its snapshot scope held are counted again. Applied
// again, it is no replacement any more (Operation.Replaces is cleared):
// what it replaced is gone.
func (l *Ledger) Reset(ctx context.Context, tx *sql.Tx, k Key) error {
	return l.ops.ResetOperation(ctx, tx, k)
}

// Restore sets operation k back to completed when it completed once (it
// records the attempt that completed it) but is processing or failed: a run
// of an earlier version that had decided to join it before it completed
// moved it back. Nothing of it is applied again; its stored outcome and
// counters are those of its completion. It reports whether it restored k.
// Reset clears the completer, so an operation applied again (--reapply) is
// never restored.
func (l *Ledger) Restore(ctx context.Context, tx *sql.Tx, k Key) (bool, error) {
	return l.ops.RestoreCompleted(ctx, tx, k)
}

// Died records that attempt was found dead (its process gone, or its lease
// taken over), unless it already recorded how it ended.
func (l *Ledger) Died(ctx context.Context, q Querier, attempt string) error {
	return l.ops.RecordDied(ctx, q, attempt)
}

// Past returns the past operations matching f (superseded, replaced, undone
// or abandoned operations that a newer one, or gc, replaced), newest first.
// Their UpdatedAt is when they were replaced.
func (l *Ledger) Past(ctx context.Context, f Filter) ([]Operation, error) {
	if ok, err := l.d.TableExists(ctx, l.db, l.prefix+"operations_past"); err != nil || !ok {
		return nil, err
	}
	replacedBy, err := l.hasReplaceCols(ctx)
	if err != nil {
		return nil, err
	}
	return l.ops.Past(ctx, l.db, f, replacedBy)
}

// Seen records path as the last path operation k was seen under (a
// duplicate run of a file moved or renamed since it was imported), so that
// status shows the name a user knows it by. Its attempts keep the paths
// they ran on.
func (l *Ledger) Seen(ctx context.Context, q Querier, k Key, path string) error {
	return l.ops.RecordPath(ctx, q, k, path)
}
