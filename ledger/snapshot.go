package ledger

import (
	"context"
	"database/sql"
	"slices"
)

// Snapshot is a snapshot applied to a table's scope: the record its
// sweep made, one per operation.
type Snapshot struct {
	Scope     string // the scope's canonical text
	AsOf      int64  // Unix milliseconds: what the snapshot's data was as of
	FileID    string
	AppliedAt int64 // Unix milliseconds
	// MarkedAt is the deletion mark its soft sweep set, in Unix
	// microseconds; 0 for a hard sweep, or one recorded before marks were.
	MarkedAt int64
}

// found returns s, or nil when it was not found or err is set.
func found(s Snapshot, ok bool, err error) (*Snapshot, error) {
	if err != nil || !ok {
		return nil, err
	}
	return &s, nil
}

// LastSnapshot returns the snapshot current for a scope of table: of those
// recorded under any of scopes (one scope spelt as this version and as
// earlier ones did), the one with the latest as-of time, the last applied
// among equals; nil when there is none. Undone snapshots are not recorded
// (ForgetSnapshot), so undoing the current one makes the one before it
// current again.
func (l *Ledger) LastSnapshot(ctx context.Context, q Querier, table string, scopes ...string) (*Snapshot, error) {
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	return found(l.ops.LastSnapshot(ctx, q, table, scopes))
}

// SnapshotOf returns the snapshot that the operation of fileID applied to
// table, or nil when it applied none (it never swept, or was undone).
func (l *Ledger) SnapshotOf(ctx context.Context, q Querier, table, fileID string) (*Snapshot, error) {
	return found(l.ops.SnapshotOf(ctx, q, table, fileID))
}

// RecordSnapshot records, inside tx, that the snapshot of fileID as of asOf
// (Unix milliseconds) was applied to scope of table, its soft sweep having
// marked rows with markedAt (Unix microseconds; 0 for a hard sweep). A
// snapshot applied again (--reapply) replaces its record.
func (l *Ledger) RecordSnapshot(ctx context.Context, tx *sql.Tx, table, scope string, asOf int64, fileID string, markedAt int64) error {
	return l.ops.RecordSnapshot(ctx, tx, table, scope, asOf, fileID, markedAt)
}

// ForgetSnapshot removes, inside tx, the record of the snapshot the
// operation of fileID applied to table (under whatever scope), so that it
// no longer counts as applied.
func (l *Ledger) ForgetSnapshot(ctx context.Context, tx *sql.Tx, table, fileID string) error {
	return l.ops.ForgetSnapshot(ctx, tx, table, fileID)
}

// ScopeRows returns the live rows the snapshot scope of operation k held
// before the operation wrote any, as RecordScopeRows stored them; ok is
// false when none is stored.
func (l *Ledger) ScopeRows(ctx context.Context, q Querier, k Key) (n int64, ok bool, err error) {
	return l.ops.ScopeRows(ctx, q, k)
}

// RecordScopeRows stores, inside tx, n as the live rows the snapshot scope
// of operation k held before it wrote any, unless a number is stored
// already: the first transaction to write counts, and the count commits
// with its writes.
func (l *Ledger) RecordScopeRows(ctx context.Context, tx *sql.Tx, k Key, n int64) error {
	return l.ops.RecordScopeRows(ctx, tx, k, n)
}

// Swept records, inside tx, that attempt's snapshot sweep removed n rows.
func (l *Ledger) Swept(ctx context.Context, tx *sql.Tx, attempt string, n int64) error {
	return l.ops.AddSwept(ctx, tx, attempt, n)
}

// SchemaChanged records, inside tx, the schema changes attempt made, in
// words.
func (l *Ledger) SchemaChanged(ctx context.Context, tx *sql.Tx, attempt, changes string) error {
	return l.ops.RecordSchemaChanges(ctx, tx, attempt, changes)
}

// Created returns the tables operation k is recorded to have created, on
// a database whose DDL commits the transaction it runs in: what dropping
// the operation's DDL steps drops.
func (l *Ledger) Created(ctx context.Context, q Querier, k Key) ([]CreatedTable, error) {
	return l.ops.Created(ctx, q, k)
}

// CreatedTable is a table an operation is recorded to have created.
type CreatedTable struct {
	Name string
	// Planned says the plan that needs it committed: an unplanned one
	// was made by an attempt killed before it stored its plan.
	Planned bool
}

// PlanCreated marks, inside tx (the one that stores the plan), the tables
// operation k created as planned: a rerun no longer drops them before it
// plans (they are the plan's), but an abandon or undo of k still does.
func (l *Ledger) PlanCreated(ctx context.Context, tx *sql.Tx, k Key) error {
	return l.ops.PlanCreated(ctx, tx, k)
}

// CreatedByOthers returns how many operations other than k are recorded
// to have created table: one that two operations created is dropped by
// neither while the other's record stays.
func (l *Ledger) CreatedByOthers(ctx context.Context, q Querier, k Key, table string) (int64, error) {
	return l.ops.CreatedByOthers(ctx, q, k, table)
}

// RecordCreated records, inside tx, that operation k creates table; the
// caller commits it before the statement that creates the table, so that
// no kill leaves a table it made unrecorded. A record there already is
// kept.
func (l *Ledger) RecordCreated(ctx context.Context, tx *sql.Tx, k Key, table string) error {
	have, err := l.ops.Created(ctx, tx, k)
	if err != nil || slices.ContainsFunc(have, func(c CreatedTable) bool { return c.Name == table }) {
		return err
	}
	return l.ops.RecordCreated(ctx, tx, k, table)
}

// ForgetCreated deletes, inside tx, the record that operation k created
// table: it was dropped, or is kept for good.
func (l *Ledger) ForgetCreated(ctx context.Context, tx *sql.Tx, k Key, table string) error {
	return l.ops.ForgetCreated(ctx, tx, k, table)
}
