package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// DefaultMaxDelete is the share of a snapshot's scope a sweep may remove
// when no limit is given.
var DefaultMaxDelete = RejectLimit{Percent: 10}

// DeleteGuardError refuses a snapshot sweep that would remove more rows than
// --max-delete allows, or any row for an empty file. Nothing of the sweep is
// applied; the operation stays resumable, and a rerun with a higher limit
// completes it.
//
// By --key the guard counts the rows whose keys the file lacks, against the
// live rows the scope held before the operation wrote any (rows the file
// moves into the scope are not among them, and rows it writes outside the
// scope never count). In ordinal mode, where every
// row of other files is replaced, it counts the rows lost: how many fewer
// rows the file has than the rows it replaces, against those.
type DeleteGuardError struct {
	Table   string
	Missing int64 // rows the guard counts as lost
	Live    int64 // rows it counts them against
	Limit   RejectLimit
	Empty   bool // the file has no rows
	Ordinal bool
}

func (e *DeleteGuardError) Error() string {
	if e.Empty {
		return fmt.Sprintf("snapshot sweep refused: the file has no rows, so it would delete all %s of %s in scope; an empty snapshot sweeps only with --max-delete 100%%; rerun with it if the source is really empty", english.Plural(e.Missing, "row"), e.Table)
	}
	if e.Ordinal {
		return fmt.Sprintf("snapshot sweep refused: the file has %s fewer than the %s of %s in scope it replaces, more than --max-delete %s allows; nothing was deleted; check the file, then rerun with a higher --max-delete to complete it", english.Plural(e.Missing, "row"), english.Plural(e.Live, "row"), e.Table, e.Limit)
	}
	return fmt.Sprintf("snapshot sweep refused: it would delete %d of the %s of %s in scope, more than --max-delete %s allows; nothing was deleted; check the file, then rerun with a higher --max-delete to complete it", e.Missing, english.Plural(e.Live, "row"), e.Table, e.Limit)
}

// snapshot returns the mapping's snapshot mode, or nil.
func (h *holding) snapshot() *Snapshot { return h.req.Mapping.Snapshot }

// stale reports, through q, whether the run's file is a snapshot older than
// the last one applied to the same table and scope (ledger.Situation.Stale),
// and returns that one (nil when it is not).
func (cl *claimer) stale(ctx context.Context, q sink.Querier) (*ledger.Snapshot, error) {
	if cl.snapshot() == nil {
		return nil, nil
	}
	last, err := cl.e.st.Ledger.LastSnapshot(ctx, q, cl.target.Table, cl.snapshot().scopeTexts()...)
	if err != nil || last == nil || last.AsOf <= asOf(cl.req.AsOf, cl.stat) {
		return nil, err
	}
	return last, nil
}

// staleText says why the run decided ledger.Stale: newer was applied.
func (cl *claimer) staleText(newer *ledger.Snapshot) string {
	text := fmt.Sprintf("snapshot as of %s is older than the one already applied to %s%s (%s, as of %s): nothing written",
		stamp(asOf(cl.req.AsOf, cl.stat)), cl.target.Table, scopeSuffix(cl.snapshot()), newer.FileID, stamp(newer.AsOf))
	if cl.req.Reapply {
		forget := ""
		if !cl.target.Ordinal() {
			forget = "--forget "
		}
		text += fmt.Sprintf("; to make this one current again, undo the newer one first (idemport undo %s--table %s %s)", forget, cl.target.Table, newer.FileID)
	}
	return text
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

func scopeSuffix(s *Snapshot) string {
	if t := s.ScopeText(); t != "" {
		return " scope " + t
	}
	return ""
}

// ensureSnapshot prepares, inside the plan's transaction, what the sweep
// (a snapshot's or a replacement's) needs: the table of keys seen, and the deletion mark column (with
// --atomic the sweep adds that column, in the completing transaction, so
// that readers see nothing of the import before it completes).
func (kp *keeper) ensureSnapshot(ctx context.Context, tx *sql.Tx, schema *arrow.Schema) error {
	if s := kp.snapshot(); s != nil && s.Soft && !kp.req.Mapping.Atomic {
		if err := kp.e.st.Driver.EnsureDeleted(ctx, tx, kp.target.Table); err != nil {
			return err
		}
	}
	if !kp.tables.keysSeen {
		return nil
	}
	return kp.e.st.Driver.EnsureSeen(ctx, tx, kp.tables.seen, kp.target.Table, kp.target.Key, keySchema(schema, kp.target.Key))
}

// keySchema is the part of schema that holds the key columns.
func keySchema(schema *arrow.Schema, key []string) *arrow.Schema {
	fields := make([]arrow.Field, len(key))
	for i, k := range key {
		fields[i] = schema.Field(schema.FieldIndices(k)[0])
	}
	return arrow.NewSchema(fields, nil)
}

// seenWriter records the keys of each batch in the seen table, in the
// partition's transaction. It is nil when the run records no keys.
//
// The seen table is keyed by row ordinal, not by the key
// (sink.Driver.EnsureSeen): the plan gives each key of the file to one row, and a
// partition's keys are written once, by the transaction that commits it, so
// the table holds each key once without a unique constraint on it, and a
// batch is copied in as it is, without an upsert. A seen table keyed by
// the key (made by an earlier version for an operation it planned) is
// written as it was.
type seenWriter struct {
	w      sink.Writer
	schema *arrow.Schema
	cols   []int
}

func (a *applier) newSeenWriter(ctx context.Context, conn *sql.Conn) (*seenWriter, error) {
	if !a.tables.keysSeen {
		return nil, nil
	}
	full := a.plan.Schema.Arrow()
	schema := keySchema(full, a.target.Key)
	tg := sink.Target{Table: a.tables.seen}
	t, err := a.e.st.Driver.Describe(ctx, conn, tg.Table)
	if err != nil {
		return nil, fmt.Errorf("record snapshot keys: %w", err)
	}
	if t != nil && !t.HasKey([]string{sink.FileColumn, sink.RowColumn}) {
		tg.Key = a.target.Key
	}
	w, err := a.e.st.Driver.Writer(ctx, conn, tg, schema)
	if err != nil {
		return nil, fmt.Errorf("record snapshot keys: %w", err)
	}
	s := &seenWriter{w: w, schema: schema}
	for _, k := range a.target.Key {
		s.cols = append(s.cols, full.FieldIndices(k)[0])
	}
	return s, nil
}

// write records the keys of rec inside tx.
func (s *seenWriter) write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) error {
	if s == nil {
		return nil
	}
	cols := make([]arrow.Array, len(s.cols))
	for i, c := range s.cols {
		cols[i] = rec.Column(c)
	}
	keys := array.NewRecordBatch(s.schema, cols, rec.NumRows())
	defer keys.Release()
	if _, err := s.w.Write(ctx, tx, fileKey, keys, ordinals); err != nil {
		return fmt.Errorf("record snapshot keys: %w", err)
	}
	return nil
}

func (s *seenWriter) close() {
	if s != nil {
		s.w.Close()
	}
}

// deleteGuard is the --max-delete guard (maxDelete, nil for the default)
// of a sweep of target: given how many live rows of the scope the sweep
// would remove (missing), how many it holds (live) with the file's rows
// in the table, how many it held before the operation
// wrote any (before, by key: see scopeBefore), and the file's plan, it
// returns the sweep's refusal, or nil. The sweep calls it before removing
// anything; plan and --dry-run call it with the counts the table would
// have, to predict the refusal.
func deleteGuard(maxDelete *RejectLimit, target sink.Target, missing, live, before int64, plan *reader.Plan) error {
	limit := DefaultMaxDelete
	if maxDelete != nil {
		limit = *maxDelete
	}
	empty := plan.Rows-plan.Rejected == 0
	lost := missing // by key: the keys gone, of those there were
	if target.Ordinal() {
		lost, before = max(0, missing-(live-missing)), missing // the rows replaced by fewer
	}
	switch {
	case empty && missing > 0 && limit.Percent < 100:
		return &DeleteGuardError{Table: target.Table, Missing: missing, Live: live, Limit: limit, Empty: true}
	case !limit.Allows(lost, before):
		return &DeleteGuardError{Table: target.Table, Missing: lost, Live: before, Limit: limit, Ordinal: target.Ordinal()}
	}
	return nil
}

// scopeSweep is the sweep of the run's snapshot over its table and scope.
func (a *applier) scopeSweep() sink.Sweep {
	s := a.req.Mapping.Snapshot
	return sink.Sweep{Driver: a.e.st.Driver, Table: a.target.Table, Key: a.target.Key, Seen: a.tables.seen, FileKey: a.id.FileKey, Scope: s.Scope, Soft: s.Soft}
}

// countScope counts, inside tx, the live rows of the snapshot's scope
// before this operation writes any, for the --max-delete guard of a sweep
// by key; it returns -1 when they need no counting (stored already, or not
// a snapshot by key). Each partition transaction of such a snapshot calls
// it before it writes, and recordScope before it commits: the first to
// commit stores its count with its rows, so the partitions it committed,
// and attempts that resume later, measure against the same rows. (The
// count is stored at the end, not here, so that the operation's record is
// not locked while the partition is written.) With --atomic nothing is
// written before the completing transaction, which counts there.
func (a *applier) countScope(ctx context.Context, tx *sql.Tx) (int64, error) {
	if a.req.Mapping.Snapshot == nil || a.target.Ordinal() || a.req.Mapping.Atomic {
		return -1, nil
	}
	if _, ok, err := a.e.st.Ledger.ScopeRows(ctx, tx, a.id.Key); err != nil || ok {
		return -1, err
	}
	return a.scopeSweep().Live(ctx, tx)
}

// recordScope stores, inside tx, n as counted by countScope, unless it is
// -1 or a count is stored already.
func (a *applier) recordScope(ctx context.Context, tx *sql.Tx, n int64) error {
	if n < 0 {
		return nil
	}
	return a.e.st.Ledger.RecordScopeRows(ctx, tx, a.id.Key, n)
}

// scopeBefore returns, inside tx, the live rows the snapshot's scope held
// before this operation wrote any: as countScope stored them; with
// --atomic, counted now (the caller calls it before the staged rows move
// in); ok is false for an operation whose partitions were all committed
// by a version that did not count them. (One such operation resumed by
// this version counts at its next partition, with what its earlier
// partitions wrote: an approximation, as earlier versions' was.)
func (a *applier) scopeBefore(ctx context.Context, tx *sql.Tx) (n int64, ok bool, err error) {
	if a.req.Mapping.Snapshot == nil || a.target.Ordinal() {
		return 0, false, nil
	}
	if n, ok, err := a.e.st.Ledger.ScopeRows(ctx, tx, a.id.Key); err != nil || ok || !a.req.Mapping.Atomic {
		return n, ok, err
	}
	sw := a.scopeSweep()
	if sw.Soft {
		// The deletion mark column is added by the sweep, after the move.
		t, err := a.e.st.Driver.Describe(ctx, tx, a.target.Table)
		if err != nil {
			return 0, false, err
		}
		sw.Soft = t != nil && t.Column(sink.DeletedColumn) != nil
	}
	n, err = sw.Live(ctx, tx)
	return n, err == nil, err
}

// guardBefore is what the --max-delete guard measures a sweep by key
// against: the rows the scope held before (stored, when ok), or, for an
// operation that did not count them, the live rows less those it inserted,
// as earlier versions measured.
func guardBefore(stored int64, ok bool, live, inserted int64) int64 {
	if ok {
		return stored
	}
	return max(0, live-inserted)
}

// sweep runs, inside the completing transaction, the snapshot's sweep:
// it refuses a sweep over the --max-delete limit (measured against before,
// as scopeBefore returned it, or the live rows less inserted when !known),
// removes (or marks) the rows of the scope the file does not have, and
// records the snapshot as applied to its scope (dropSeen then drops the
// table of keys seen). It returns the rows removed.
func (a *applier) sweep(ctx context.Context, tx *sql.Tx, inserted, before int64, known bool) (int64, error) {
	s := a.req.Mapping.Snapshot
	if s == nil {
		return 0, nil
	}
	if err := a.e.st.Hit("before-sweep"); err != nil {
		return 0, err
	}
	scope := s.ScopeText()
	if err := a.noNewerSnapshot(ctx, tx, s); err != nil {
		return 0, err
	}
	if s.Soft && a.req.Mapping.Atomic && !a.e.st.DDLCommits() { // else added before tx (completionDDL)
		if err := a.e.st.Driver.EnsureDeleted(ctx, tx, a.target.Table); err != nil {
			return 0, err
		}
	}
	sw := a.scopeSweep()
	missing, live, err := sw.Count(ctx, tx)
	if err != nil {
		return 0, err
	}
	if err := deleteGuard(a.req.MaxDelete, a.target, missing, live, guardBefore(before, known, live, inserted), a.plan); err != nil {
		return 0, err
	}
	// The mark is recorded in microseconds, as both databases keep it, so
	// that undo can find the rows this sweep marked.
	now := time.Now().Truncate(time.Microsecond)
	deleted, err := sw.Apply(ctx, tx, a.e.st.Driver.TimeValue(now))
	if err != nil {
		return 0, err
	}
	if err := a.recordSweep(ctx, tx, s, scope, now, deleted); err != nil {
		return 0, err
	}
	if err := a.e.st.Hit("after-sweep"); err != nil {
		return 0, err
	}
	return deleted, nil
}

// noNewerSnapshot fails the sweep of snapshot s when a newer snapshot of
// its scope was applied while this one was being imported.
func (a *applier) noNewerSnapshot(ctx context.Context, tx *sql.Tx, s *Snapshot) error {
	last, err := a.e.st.Ledger.LastSnapshot(ctx, tx, a.target.Table, s.scopeTexts()...)
	if err != nil {
		return err
	}
	if last != nil && last.AsOf > a.tables.asOf {
		return fmt.Errorf("a newer snapshot of %s%s (%s, as of %s) was applied while this one (as of %s) was being imported; not sweeping: undo this import or import a newer snapshot",
			a.target.Table, scopeSuffix(s), last.FileID, stamp(last.AsOf), stamp(a.tables.asOf))
	}
	return nil
}

// recordSweep records, in tx, snapshot s as applied to its scope (the rows
// it marked deleted at now, when soft) and the rows this attempt's sweep
// removed.
func (a *applier) recordSweep(ctx context.Context, tx *sql.Tx, s *Snapshot, scope string, now time.Time, deleted int64) error {
	var marked int64
	if s.Soft {
		marked = now.UnixMicro()
	}
	if err := a.e.st.Ledger.RecordSnapshot(ctx, tx, a.target.Table, scope, a.tables.asOf, a.id.FileID, marked); err != nil {
		return err
	}
	return a.e.st.Ledger.Swept(ctx, tx, a.attempt.ID, deleted)
}

// dropSeen drops, inside the completing transaction, the table of the keys
// the file had, once the sweeps that read it ran.
func (a *applier) dropSeen(ctx context.Context, tx *sql.Tx) error {
	if !a.tables.keysSeen || a.e.st.DDLCommits() { // else dropped after tx (dropAfterCompletion)
		return nil
	}
	if err := a.e.st.Driver.DropTable(ctx, tx, a.tables.seen); err != nil {
		return fmt.Errorf("drop the file's keys: %w", err)
	}
	return nil
}
