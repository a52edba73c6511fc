package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
	"github.com/idemport/idemport/sink"
)

// VerifyReport is what Verify found. The file checks out when Differences
// is empty.
type VerifyReport struct {
	File          string `json:"file"`
	Table         string `json:"table,omitempty"`
	FileID        string `json:"file_id,omitempty"`
	ContentDigest string `json:"content_digest,omitempty"`
	State         string `json:"state"`
	// Key lists the natural key columns the file was verified by; empty
	// in ordinal mode.
	Key         []string `json:"key,omitempty"`
	Expected    int64    `json:"expected_rows"` // rows the target should hold for the file
	Found       int64    `json:"found_rows"`    // rows it holds
	Differences []string `json:"differences"`
	// DifferingRows counts, by --key, the rows the file last wrote (by
	// their lineage) whose stored values differ from the file's winning
	// occurrence of their key; Values shows the first of the differences
	// (at most MaxValueDifferences), one per row and column.
	DifferingRows int64             `json:"differing_rows,omitempty"`
	Values        []ValueDifference `json:"value_differences,omitempty"`
	// Busy, when not empty, says which live import holds the file's
	// operation (State "processing"; a BusyError's Holding): the file is
	// not checked, and shows no difference, until that import ends.
	Busy string `json:"busy,omitempty"`
	// Next is the command that repairs the difference, when one does.
	Next string `json:"next,omitempty"`
	// Candidates lists, when the file matches several imports (State
	// "ambiguous"), each of them with the command that verifies it.
	Candidates []Candidate `json:"candidates,omitempty"`
	// Reapply is true when the import is completed and the target lacks
	// some of its rows (or its table): import --reapply restores them.
	Reapply bool `json:"-"`
}

// Candidate is one of the imports a file matches: its table and file ID,
// and the command that chooses it.
type Candidate struct {
	Table   string `json:"table"`
	FileID  string `json:"file_id"`
	Command string `json:"command"`
}

// ValueDifference is a stored value that is not the file's: in the row
// whose key columns (VerifyReport.Key) hold KeyValues (as text), the
// column Column holds Stored where the file has File, as the database
// stores it; nil is NULL.
type ValueDifference struct {
	KeyValues []string `json:"key_values"`
	Column    string   `json:"column"`
	Stored    *string  `json:"stored,omitempty"`
	File      *string  `json:"file,omitempty"`
}

// MaxValueDifferences is how many value differences a VerifyReport shows;
// it counts them all.
const MaxValueDifferences = 10

// Verify re-hashes the file of req (never from the quick check), compares
// its content and mapping with the ledger, and recounts the file's rows in
// the target: in ordinal mode the rows whose lineage is the file, in
// natural-key mode the file's keys that are present. In natural-key mode
// it also compares values: every row whose lineage is the file must hold,
// in each of the file's columns, the value of the file's winning
// occurrence of its key (the one the import applied: the last, or with a
// version column the newest), compared as the import compares a row it
// may leave unchanged (sink.Driver.Exact). Rows another file wrote since
// are not compared. It reads the file one batch at a time: memory is
// bounded by a batch and a partition's plan, whatever the file's size. An
// import another live attempt holds is not checked: the report says who
// holds it (VerifyReport.Busy).
func (e *Engine) Verify(ctx context.Context, req Request) (*VerifyReport, error) {
	if err := e.st.Present(); err != nil {
		return nil, err
	}
	req.Rehash, req.Reapply = true, false
	r := newRun(e, req)
	defer r.in.close(e.st.Log)
	r.defaults()
	ident, err := r.identify(ctx)
	if err != nil {
		return nil, err
	}
	r.identified(ident)
	rep := &VerifyReport{File: r.req.Path, Table: r.target.Table, FileID: r.id.FileID, ContentDigest: r.id.ContentDigest, Key: r.target.Key}
	op, now, err := e.st.Ledger.Get(ctx, e.st.DB, r.id.Key)
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
	dd, err := r.decide(ctx, e.st.DB, op, now)
	if err != nil {
		return nil, err
	}
	if what, how := ledger.Difference(op, r.id); what != "" {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s differs from the ledger's (%s)", what, how))
		return rep, nil
	}
	switch dd.decision {
	case ledger.Duplicate:
	case ledger.Busy:
		rep.Busy = r.heldBy(ctx, op).Holding()
		return rep, nil
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
		rep.Found, err = e.st.Driver.CountFile(ctx, e.st.DB, r.target.Table, r.id.FileKey)
		if err != nil {
			return nil, fmt.Errorf("count rows of %s: %w", r.target.Table, err)
		}
	} else if err = e.checkKeys(ctx, r, rep); err != nil {
		return nil, err
	}
	if rep.Found != rep.Expected {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s holds %d of the file's rows, the ledger says %d", r.target.Table, rep.Found, rep.Expected))
		rep.Reapply = true
	}
	if rep.DifferingRows > 0 {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s of %s %s values other than the file's", english.Plural(rep.DifferingRows, "row"), r.target.Table, english.Verb(rep.DifferingRows, "holds", "hold")))
		rep.Reapply = true
	}
	return rep, nil
}

// Recorded returns the current operations of the file at path, newest
// first, for a verify given no mapping: those of its content (a local file
// is hashed, and its stored bytes' digest counts too), else those last
// seen at path or attempted under it (a file changed since its import). A
// table and a file ID (or a --file-id template, expanded for each
// operation's content), when not empty, narrow them. Undone operations are
// left out unless they are all there is. A stream (standard input, a pipe)
// has no path to look up and is read only once: ok is false, and it is
// verified by the mapping given. A local file that does not exist is an
// error.
func (e *Engine) Recorded(ctx context.Context, path, table, fileID string) (ops []ledger.Operation, ok bool, err error) {
	if err := e.st.Present(); err != nil {
		return nil, false, err
	}
	if isStream(path) {
		return nil, false, nil
	}
	if !remote.IsURL(path) {
		if _, err := os.Stat(path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, false, fmt.Errorf("%s: %w", path, pe.Err)
			}
			return nil, false, err
		}
	}
	narrow := func(ops []ledger.Operation) []ledger.Operation {
		if fileID == "" {
			return ops
		}
		return slices.DeleteFunc(ops, func(op ledger.Operation) bool {
			return op.FileID != FileID(fileID, path, op.ContentDigest)
		})
	}
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !remote.IsURL(path) {
		filters, err := e.st.FileFilters(ctx, path, table)
		if err != nil {
			return nil, false, err
		}
		if ops, err = e.st.ListAll(ctx, filters, e.st.Ledger.List); err != nil {
			return nil, false, err
		}
		ops = narrow(ops)
	}
	if len(ops) == 0 {
		paths := []string{path}
		if remote.IsURL(path) {
			paths = []string{remote.Redact(path)}
		} else if clean := filepath.Clean(path); clean != path {
			paths = append(paths, clean)
		}
		for _, p := range paths {
			found, err := e.st.Ledger.List(ctx, ledger.Filter{Table: table, Path: p})
			if err != nil {
				return nil, false, err
			}
			if ops = narrow(found); len(ops) > 0 {
				break
			}
		}
	}
	if live := slices.DeleteFunc(slices.Clone(ops), func(op ledger.Operation) bool { return op.State == ledger.Undone }); len(live) > 0 {
		ops = live
	}
	return ops, true, nil
}

// RequestFor returns the request that verifies the file at path as op
// was imported: into op's table, under op's file ID, with the mapping op
// recorded (format options at their defaults where those give the same).
func RequestFor(op ledger.Operation, path string) (Request, error) {
	m, err := parseMapping(op.Mapping, path)
	if err != nil {
		return Request{}, err
	}
	m.Table = op.Table
	return Request{Path: path, FileID: op.FileID, Mapping: m}, nil
}

// replayedCount counts the rejects of k that a replay applied.
func (e *Engine) replayedCount(ctx context.Context, k ledger.Key) (int64, error) {
	rs, err := e.st.Ledger.Rejects(ctx, e.st.DB, k)
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

// checkKeys reads the whole file and counts, in rep.Found, its good rows
// whose natural key is present in the target, and compares the values of
// those the file last wrote (compareKeys). The file is read as the
// import read it: with the table's column types (text formats) and the
// forced ones, so that a value is the one that was stored, not what
// inference makes of it alone; and with its superseded rows skipped, as
// the plan pass found them, so that each key's row is the one the import
// applied.
func (e *Engine) checkKeys(ctx context.Context, r *run, rep *VerifyReport) error {
	in, table, err := r.planInputs(ctx)
	if err != nil {
		return err
	}
	if table == nil {
		return nil
	}
	tmp, err := r.keySpillDir()
	if err != nil {
		return err
	}
	f, err := r.in.open(r.readerOptions(in))
	if err != nil {
		return err
	}
	plan, err := f.Scan(ctx, reader.ScanOptions{PartitionRows: r.req.PartitionRows, PartitionBytes: r.req.PartitionBytes, TempDir: tmp, KeysHeld: r.req.KeysHeld})
	if err != nil {
		return err
	}
	// The file's columns the table has that an upsert writes over a
	// stored row: those that are not the key, and decimal key columns.
	var have []string
	for _, c := range plan.Schema {
		if table.Column(c.Name) != nil {
			have = append(have, c.Name)
		}
	}
	cols := sink.Rewritten(table, r.target, have)
	// Bound the parameters of a statement well below the least limit of
	// the databases (SQLite's 32766).
	batch := max(1, min(500, 30000/(len(r.target.Key)+len(cols)+1)))
	return eachBatch(f, plan, batch, func(rec arrow.RecordBatch) error {
		n, err := e.compareKeys(ctx, sink.Comparison{Target: r.target, Table: table, FileKey: r.id.FileKey, Columns: cols}, rec, plan.Schema, rep)
		rep.Found += n
		return err
	})
}

// compareKeys compares the rows of rec with the target (sink.Driver.Compare,
// c given rec's key and value columns): it returns how many of rec's keys
// the target holds, and adds the rows that the file with key c.FileKey
// last wrote whose values in c.Columns are not rec's to rep.DifferingRows
// and, up to MaxValueDifferences, to rep.Values.
func (e *Engine) compareKeys(ctx context.Context, c sink.Comparison, rec arrow.RecordBatch, schema reader.Schema, rep *VerifyReport) (int64, error) {
	n := int(rec.NumRows())
	c.Rows = make([][]any, n)
	for i := range c.Rows {
		row := make([]any, 0, len(c.Target.Key)+len(c.Columns))
		for _, k := range c.Target.Key {
			row = append(row, keyValue(rec.Column(schema.Index(k)), i))
		}
		for _, col := range c.Columns {
			row = append(row, storedValue(rec.Column(schema.Index(col)), i))
		}
		c.Rows[i] = row
	}
	text := func(v sql.NullString) *string {
		if !v.Valid {
			return nil
		}
		return &v.String
	}
	return e.st.Driver.Compare(ctx, e.st.DB, c, func(d sink.Differing) error {
		rep.DifferingRows++
		key := make([]string, len(d.Key))
		for i, k := range d.Key {
			key[i] = k.String
		}
		for j, col := range c.Columns {
			if d.Differs[j] && len(rep.Values) < MaxValueDifferences {
				rep.Values = append(rep.Values, ValueDifference{KeyValues: key, Column: col, Stored: text(d.Stored[j]), File: text(d.File[j])})
			}
		}
		return nil
	})
}

// storedValue returns row i of a as a value column is bound to be compared
// with what the sinks stored: keyValue's, and dates and timestamps without
// a zone as their text (sink.FormatDate, sink.FormatLocalTimestamp).
func storedValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Timestamp:
		if tt, ok := a.DataType().(*arrow.TimestampType); ok && tt.TimeZone == "" {
			return sink.FormatLocalTimestamp(int64(a.Value(i)))
		}
	case *array.Date32:
		return sink.FormatDate(int32(a.Value(i)))
	}
	return keyValue(a, i)
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
