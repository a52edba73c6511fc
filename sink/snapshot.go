package sink

import (
	"context"
	"database/sql"
)

// DeletedColumn marks the rows a soft snapshot sweep deleted: when, as a
// timestamp. NULL means the row is live.
const DeletedColumn = "_idemport_deleted_at"

// Term is one COLUMN=VALUE condition of a snapshot's scope. The value is
// compared as the column's type reads it (the database converts it).
type Term struct {
	Column string
	Value  string
}

// Sweep removes, after a snapshot file's rows are written, the rows of a
// table (or of its scope) that the file does not have.
//
// With Key (natural-key mode) a row is kept when its key is in Seen, a
// table holding the keys the file had; without Key (ordinal mode) a row is
// kept when its lineage is FileKey, the snapshot file's. With Soft the rows
// are not deleted but marked in DeletedColumn, and marks on rows the file
// has are cleared.
type Sweep struct {
	Driver  Driver
	Table   string
	Key     []string
	Seen    string
	FileKey int64
	Scope   []Term
	Soft    bool
}

// Quoted quotes a table name as the driver names tables.
func (s Sweep) Quoted(name string) string { return s.Driver.QuoteTable(name) }

// Count returns, inside q, how many live rows of the scope the sweep would
// remove, and how many live rows the scope holds (Driver.SweepCount).
func (s Sweep) Count(ctx context.Context, q Querier) (missing, live int64, err error) {
	return s.Driver.SweepCount(ctx, q, s)
}

// Live returns, inside q, how many live rows the scope holds
// (Driver.SweepLive).
func (s Sweep) Live(ctx context.Context, q Querier) (int64, error) {
	return s.Driver.SweepLive(ctx, q, s)
}

// Apply deletes (or marks, with the time now) the live rows of the scope
// that the file does not have, clears the marks of rows it has, inside tx,
// and returns how many rows it deleted or marked (Driver.SweepApply).
func (s Sweep) Apply(ctx context.Context, tx *sql.Tx, now any) (int64, error) {
	return s.Driver.SweepApply(ctx, tx, s, now)
}

// Unmark clears, inside tx, the deletion marks of the rows of the scope
// that a soft sweep marked with mark (the value Apply was given as now),
// making them live again, and returns how many it cleared
// (Driver.SweepUnmark).
func (s Sweep) Unmark(ctx context.Context, tx *sql.Tx, mark any) (int64, error) {
	return s.Driver.SweepUnmark(ctx, tx, s, mark)
}
