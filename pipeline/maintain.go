package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// VerifyReport is what Verify found. The file checks out when Differences
// is empty.
type VerifyReport struct {
	File          string   `json:"file"`
	Table         string   `json:"table"`
	FileID        string   `json:"file_id"`
	ContentDigest string   `json:"content_digest"`
	State         string   `json:"state"`
	Expected      int64    `json:"expected_rows"` // rows the target should hold for the file
	Found         int64    `json:"found_rows"`    // rows it holds
	Differences   []string `json:"differences"`
	// Next is the command that repairs the difference, when one does.
	Next string `json:"next,omitempty"`
	// Reapply is true when the import is completed and the target lacks
	// some of its rows (or its table): import --reapply restores them.
	Reapply bool `json:"-"`
}

// Verify re-hashes the file of req (never from the quick check), compares
// its content and mapping with the ledger, and recounts the file's rows in
// the target: in ordinal mode the rows whose lineage is the file, in
// natural-key mode the file's keys that are present.
func (e *Engine) Verify(ctx context.Context, req Request) (*VerifyReport, error) {
	req.Rehash, req.Reapply = true, false
	r := newRun(e, req)
	defer r.closeSource()
	r.defaults()
	r.res = &Result{}
	if err := r.identify(ctx); err != nil {
		return nil, err
	}
	rep := &VerifyReport{File: r.req.Path, Table: r.target.Table, FileID: r.id.FileID, ContentDigest: r.id.ContentDigest}
	op, now, err := e.ledger.Get(ctx, e.db, r.id.Key)
	if err != nil {
		return nil, err
	}
	if op == nil {
		rep.State = "unknown"
		rep.Differences = append(rep.Differences, fmt.Sprintf("the ledger has no import of %s into %s", r.id.FileID, r.target.Table))
		return rep, nil
	}
	rep.State = string(op.State)
	// The file checks out where an import of it would be a duplicate.
	s, err := r.situation(ctx, e.db, op, now)
	if err != nil {
		return nil, err
	}
	d, _ := ledger.Decide(s)
	if what, how := ledger.Difference(op, r.id); what != "" {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s differs from the ledger's (%s)", what, how))
		return rep, nil
	}
	switch d {
	case ledger.Duplicate:
	case ledger.Reapply:
		rep.Differences = append(rep.Differences, fmt.Sprintf("the import is completed, but its table %s no longer exists", op.Table))
		rep.Reapply = true
		return rep, nil
	default:
		rep.Differences = append(rep.Differences, fmt.Sprintf("the import is %s, not completed", op.State))
		return rep, nil
	}
	replayed, err := e.replayedCount(ctx, op.Key)
	if err != nil {
		return nil, err
	}
	// Superseded rows were never applied: the file's scan below skips them too.
	rep.Expected = op.Rows.Read - op.Rows.Rejected - op.Rows.Superseded + replayed
	if r.target.Ordinal() {
		err = e.db.QueryRowContext(ctx, e.sink.Rebind(`SELECT count(*) FROM `+e.sink.QuoteTable(r.target.Table)+
			` WHERE `+e.sink.Quote(sink.FileColumn)+` = ?`), r.id.FileKey).Scan(&rep.Found)
		if err != nil {
			return nil, fmt.Errorf("count rows of %s: %w", r.target.Table, err)
		}
	} else if rep.Found, err = e.countKeys(ctx, r); err != nil {
		return nil, err
	}
	if rep.Found != rep.Expected {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s holds %d of the file's rows, the ledger says %d", r.target.Table, rep.Found, rep.Expected))
		rep.Reapply = true
	}
	return rep, nil
}

// replayedCount counts the rejects of k that a replay applied.
func (e *Engine) replayedCount(ctx context.Context, k ledger.Key) (int64, error) {
	rs, err := e.ledger.Rejects(ctx, e.db, k)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range rs {
		if r.ReplayedBy != "" {
			n++
		}
	}
	return n, nil
}

// countKeys reads the whole file and counts its good rows whose natural key
// is present in the target. The file is read as the import read it: with
// the table's column types (text formats) and the forced ones, so that a
// key is the value that was stored, not what inference makes of it alone.
func (e *Engine) countKeys(ctx context.Context, r *run) (int64, error) {
	in, table, err := r.planInputs(ctx)
	if err != nil {
		return 0, err
	}
	if table == nil {
		return 0, nil
	}
	f, err := r.open(r.readerOptions(in))
	if err != nil {
		return 0, err
	}
	plan, err := f.Scan(ctx, reader.ScanOptions{PartitionRows: r.req.PartitionRows, PartitionBytes: r.req.PartitionBytes})
	if err != nil {
		return 0, err
	}
	var found int64
	err = eachBatch(f, plan, 500, func(rec arrow.RecordBatch) error {
		n, err := e.presentKeys(ctx, r.target, table, rec, plan.Schema)
		found += n
		return err
	})
	return found, err
}

// eachBatch reads every partition of plan from f, in batches of at most
// batchRows rows, and calls fn with each batch's record, which is valid only
// during the call. It stops at fn's first error and returns it.
func eachBatch(f *reader.File, plan *reader.Plan, batchRows int, fn func(arrow.RecordBatch) error) error {
	for b, err := range f.Batches(plan, plan.Partitions, batchRows) {
		if err == nil {
			err = fn(b.Record)
			b.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// presentKeys counts the rows of rec whose key is present in the target
// table (a key that appears twice in rec counts twice). Each key value is
// bound as the driver compares it with its column (KeyParam, KeyArg), and
// compared as the driver compares keys (KeyValue: 1.5 finds a stored
// 1.50).
func (e *Engine) presentKeys(ctx context.Context, tg sink.Target, table *sink.Table, rec arrow.RecordBatch, schema reader.Schema) (int64, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return 0, nil
	}
	names := make([]string, len(tg.Key))
	on := make([]string, len(tg.Key))
	params := make([]string, len(tg.Key))
	for i, k := range tg.Key {
		names[i] = fmt.Sprintf("k%d", i)
		kind := table.Kind(k)
		on[i] = e.sink.KeyValue("t."+e.sink.Quote(k), kind) + " = " + e.sink.KeyValue(fmt.Sprintf("b.k%d", i), kind)
		params[i] = e.sink.KeyParam("")
		if c := table.Column(k); c != nil {
			params[i] = e.sink.KeyParam(c.SQLType)
		}
	}
	tuple := "(" + strings.Join(params, ", ") + ")"
	args := make([]any, 0, n*len(tg.Key))
	for i := 0; i < n; i++ {
		for _, k := range tg.Key {
			args = append(args, e.sink.KeyArg(keyValue(rec.Column(schema.Index(k)), i)))
		}
	}
	q := `WITH b(` + strings.Join(names, ", ") + `) AS (VALUES ` + strings.TrimSuffix(strings.Repeat(tuple+",", n), ",") +
		`) SELECT count(*) FROM b JOIN ` + e.sink.QuoteTable(tg.Table) + ` t ON ` + strings.Join(on, " AND ")
	var c int64
	if err := e.db.QueryRowContext(ctx, e.sink.Rebind(q), args...).Scan(&c); err != nil {
		return 0, fmt.Errorf("look up keys in %s: %w", tg.Table, err)
	}
	return c, nil
}

// keyValue returns row i of a as the value a key lookup binds: the Go value
// of its kind, text for decimals and timestamps (as the sinks store them),
// nil for null.
func keyValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Timestamp:
		return sink.FormatTimestamp(int64(a.Value(i)))
	}
	return a.ValueStr(i)
}

// GCReport says what GC removed, or would remove with DryRun.
type GCReport struct {
	Cutoff         time.Time `json:"cutoff"`
	Operations     int       `json:"operations"`      // completed operations whose detail was dropped
	Partitions     int64     `json:"partitions"`      // per-partition rows deleted
	Plans          int64     `json:"plans"`           // stored plans deleted
	RejectPayloads int64     `json:"reject_payloads"` // rejects whose raw value and row were cleared
	Retired        int64     `json:"retired"`         // undone and abandoned operations moved to history
	Events         int64     `json:"events"`          // outbox events delivered (or owed to no sink) before the cutoff, deleted
	// Dropped names the staging (--atomic) and key (--snapshot) tables of
	// operations that will never complete (undone, abandoned, refused or
	// superseded), which GC drops whatever their age.
	Dropped []string `json:"dropped_tables,omitempty"`
	DryRun  bool     `json:"dry_run"`
}

// GC drops the bulky data of operations completed before now - olderThan:
// their stored plans, per-partition rows, and the raw values and rows of
// their rejects. It keeps the identity evidence: operations (key,
// fingerprint, state, counts, stored outcome), attempts, and the rejects'
// ordinals and reasons, so duplicate detection and history keep working.
// Undone and abandoned operations older than the window move to the past
// operations, out of status and into history. Other operations that are
// not completed are never touched. Outbox events recorded before the
// cutoff whose every delivery was made before it (or that are owed to no
// sink) are deleted; events still pending or refused by a sink are kept.
func (e *Engine) GC(ctx context.Context, olderThan time.Duration, dryRun bool) (*GCReport, error) {
	rep := &GCReport{Cutoff: time.Now().Add(-olderThan).UTC(), DryRun: dryRun}
	ops, err := e.ledger.List(ctx, ledger.Filter{State: ledger.Completed})
	if err != nil {
		return nil, err
	}
	tx, err := beginTx(ctx, e.db)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	for _, op := range ops {
		if op.CompletedAt >= rep.Cutoff.UnixMilli() {
			continue
		}
		k := checkpoint.Op{Table: op.Table, FileID: op.FileID}
		plans, parts, err := e.cp.Drop(ctx, tx.Tx, k)
		if err != nil {
			return nil, err
		}
		payloads, err := e.ledger.DropRejectPayloads(ctx, tx.Tx, op.Key)
		if err != nil {
			return nil, err
		}
		if plans+parts+payloads > 0 {
			rep.Operations++
		}
		rep.Plans += plans
		rep.Partitions += parts
		rep.RejectPayloads += payloads
	}
	// Undone and abandoned operations are resolved: past the window they
	// leave status for history (their detail went when they ended).
	for _, state := range []ledger.State{ledger.Undone, ledger.Abandoned} {
		ended, err := e.ledger.List(ctx, ledger.Filter{State: state})
		if err != nil {
			return nil, err
		}
		for _, op := range ended {
			if op.UpdatedAt >= rep.Cutoff.UnixMilli() {
				continue
			}
			if err := e.ledger.Replace(ctx, tx.Tx, op.Key, ""); err != nil {
				return nil, err
			}
			rep.Retired++
		}
	}
	if rep.Events, err = e.ledger.PruneEvents(ctx, tx.Tx, rep.Cutoff.UnixMilli()); err != nil {
		return nil, err
	}
	if rep.Dropped, err = e.dropOrphans(ctx, tx.Tx); err != nil {
		return nil, err
	}
	if dryRun {
		return rep, nil // the deferred rollback undoes it all
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit gc: %w", err)
	}
	return rep, nil
}

// dropOrphans drops, inside tx, the staging and key tables of this
// ledger's operations that are not processing or failed (and so will never
// complete and drop them itself), and returns their names. Tables of
// operations this ledger does not have are left alone: where the database
// has schemas they may belong to another ledger (another state schema)
// importing the same file into a table of the same name elsewhere.
func (e *Engine) dropOrphans(ctx context.Context, tx *sql.Tx) ([]string, error) {
	current, err := e.sink.CurrentSchema(ctx, tx)
	if err != nil {
		return nil, err
	}
	// tables names the staging and key tables of op as the driver's Tables
	// lists them: schema.name beside the target where the database has
	// schemas (current when the target's name is unqualified), else name.
	tables := func(op ledger.Operation) [2]string {
		h := strconv.FormatUint(uint64(FileKey(op.Table+"\x00"+op.FileID)), 16)
		schema := current
		if e.sink.Limits().QualifiedNames {
			if i := strings.LastIndexByte(op.Table, '.'); i >= 0 {
				schema = strings.Trim(op.Table[:i], `"`)
			}
		}
		if schema != "" {
			schema += "."
		}
		return [2]string{schema + sink.StagePrefix + h, schema + "_idemport_seen_" + h}
	}
	ops, err := e.ledger.List(ctx, ledger.Filter{})
	if err != nil {
		return nil, err
	}
	mine, live := map[string]bool{}, map[string]bool{}
	for _, op := range ops {
		for _, name := range tables(op) {
			mine[name] = true
			if op.State == ledger.Processing || op.State == ledger.Failed {
				live[name] = true
			}
		}
	}
	names, err := e.sink.Tables(ctx, tx, sink.StagePrefix, "_idemport_seen_")
	if err != nil {
		return nil, fmt.Errorf("list staging tables: %w", err)
	}
	var drop []string
	for _, name := range names {
		if mine[name] && !live[name] {
			drop = append(drop, name)
		}
	}
	for _, name := range drop {
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+e.sink.QuoteTable(name)); err != nil {
			return nil, fmt.Errorf("drop %s: %w", name, err)
		}
	}
	return drop, nil
}
