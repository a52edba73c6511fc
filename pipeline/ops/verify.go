package ops

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
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/internal/store"
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
// holds it (VerifyReport.Busy). The file checks out exactly where an
// import of it would be a duplicate (pipeline.Examine).
func (o *Operator) Verify(ctx context.Context, req pipeline.Request) (*VerifyReport, error) {
	x, err := pipeline.Examine(ctx, o.st, req)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	rep := &VerifyReport{File: x.File, Table: x.Target.Table, FileID: x.ID.FileID, ContentDigest: x.ID.ContentDigest, Key: x.Target.Key}
	if !o.settled(ctx, x, rep) {
		return rep, nil
	}
	if err := o.recount(ctx, x, rep); err != nil {
		return nil, err
	}
	if rep.Found != rep.Expected {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s holds %d of the file's rows, the ledger says %d", x.Target.Table, rep.Found, rep.Expected))
		rep.Reapply = true
	}
	if rep.DifferingRows > 0 {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s of %s %s values other than the file's", english.Plural(rep.DifferingRows, "row"), x.Target.Table, english.Verb(rep.DifferingRows, "holds", "hold")))
		rep.Reapply = true
	}
	return rep, nil
}

// settled fills in rep what the ledger says of the examined file x, and
// reports whether its import is completed as this file, so that the target
// is to be recounted: where an import of it would be a duplicate.
func (o *Operator) settled(ctx context.Context, x *pipeline.Examination, rep *VerifyReport) bool {
	op := x.Op
	if op == nil {
		rep.State = "unknown"
		rep.Differences = append(rep.Differences, fmt.Sprintf("the ledger has no import of %s into %s", x.ID.FileID, x.Target.Table))
		return false
	}
	rep.State = string(op.State)
	if what, how := ledger.Difference(op, x.ID); what != "" {
		rep.Differences = append(rep.Differences, fmt.Sprintf("%s differs from the ledger's (%s)", what, how))
		return false
	}
	switch x.Decision {
	case ledger.Duplicate:
		return true
	case ledger.Busy:
		rep.Busy = x.Holding(ctx)
	case ledger.Reapply:
		rep.Differences = append(rep.Differences, fmt.Sprintf("the import is completed, but its table %s no longer exists", op.Table))
		rep.Reapply = true
	default:
		rep.Differences = append(rep.Differences, fmt.Sprintf("the import is %s, not completed", op.State))
	}
	return false
}

// recount sets rep.Expected, the rows the ledger says the completed
// import of x left in its table, and rep.Found, those the table holds; by
// key it also compares their values (checkKeys).
func (o *Operator) recount(ctx context.Context, x *pipeline.Examination, rep *VerifyReport) error {
	op := x.Op
	replayed, err := o.replayedCount(ctx, op.Key)
	if err != nil {
		return err
	}
	// Superseded rows were never applied: the file's scan skips them too.
	rep.Expected = op.Rows.Read - op.Rows.Rejected - op.Rows.Superseded + replayed
	if x.Target.Ordinal() {
		rep.Found, err = o.st.Driver.CountFile(ctx, o.st.DB, x.Target.Table, x.ID.FileKey)
		if err != nil {
			return fmt.Errorf("count rows of %s: %w", x.Target.Table, err)
		}
		return nil
	}
	return o.checkKeys(ctx, x, rep)
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
func (o *Operator) Recorded(ctx context.Context, path, table, fileID string) (ops []ledger.Operation, ok bool, err error) {
	if err := o.st.Present(); err != nil {
		return nil, false, err
	}
	if pipeline.IsStream(path) {
		return nil, false, nil
	}
	if err := statRecorded(path); err != nil {
		return nil, false, err
	}
	if ops, err = o.recordedByContent(ctx, path, table, fileID); err != nil {
		return nil, false, err
	}
	if len(ops) == 0 {
		if ops, err = o.recordedByPath(ctx, path, table, fileID); err != nil {
			return nil, false, err
		}
	}
	if live := slices.DeleteFunc(slices.Clone(ops), func(op ledger.Operation) bool { return op.State == ledger.Undone }); len(live) > 0 {
		ops = live
	}
	return ops, true, nil
}

// statRecorded checks that path, unless a URL, names something that
// exists; the error is path and the reason, as the file system gives it.
func statRecorded(path string) error {
	if !remote.IsURL(path) {
		if _, err := os.Stat(path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s: %w", path, pe.Err)
			}
			return err
		}
	}
	return nil
}

// recordedByContent returns the operations of the local file at path (in
// table, when given) found as FileFilters finds them, narrowed to fileID.
func (o *Operator) recordedByContent(ctx context.Context, path, table, fileID string) ([]ledger.Operation, error) {
	var ops []ledger.Operation
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !remote.IsURL(path) {
		filters, err := o.st.FileFilters(ctx, path, table)
		if err != nil {
			return nil, err
		}
		if ops, err = o.st.ListAll(ctx, filters, o.st.Ledger.List); err != nil {
			return nil, err
		}
		ops = narrowFileID(ops, fileID, path)
	}
	return ops, nil
}

// recordedByPath returns the operations recorded under path as given (a
// URL without its secrets), or else as cleaned, narrowed to fileID.
func (o *Operator) recordedByPath(ctx context.Context, path, table, fileID string) ([]ledger.Operation, error) {
	var ops []ledger.Operation
	paths := []string{path}
	if remote.IsURL(path) {
		paths = []string{remote.Redact(path)}
	} else if clean := filepath.Clean(path); clean != path {
		paths = append(paths, clean)
	}
	for _, p := range paths {
		found, err := o.st.Ledger.List(ctx, ledger.Filter{Table: table, Path: p})
		if err != nil {
			return nil, err
		}
		if ops = narrowFileID(found, fileID, path); len(ops) > 0 {
			break
		}
	}
	return ops, nil
}

// narrowFileID keeps of ops those whose file ID is what fileID, a
// --file-id template, makes of path and their content; all when it is
// empty.
func narrowFileID(ops []ledger.Operation, fileID, path string) []ledger.Operation {
	if fileID == "" {
		return ops
	}
	return slices.DeleteFunc(ops, func(op ledger.Operation) bool {
		return op.FileID != pipeline.FileID(fileID, path, op.ContentDigest)
	})
}

// replayedCount counts the rejects of k that a replay applied.
func (o *Operator) replayedCount(ctx context.Context, k ledger.Key) (int64, error) {
	rs, err := o.st.Ledger.Rejects(ctx, o.st.DB, k)
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

// checkKeys reads the whole file of x and counts, in rep.Found, its good
// rows whose natural key is present in the target, and compares the values
// of those the file last wrote (compareKeys). The file is read as the
// import read it (pipeline.Examination.Read).
func (o *Operator) checkKeys(ctx context.Context, x *pipeline.Examination, rep *VerifyReport) error {
	f, plan, table, err := x.Read(ctx)
	if err != nil || table == nil {
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
	cols := sink.Rewritten(table, x.Target, have)
	// Bound the parameters of a statement well below the least limit of
	// the databases (SQLite's 32766).
	batch := max(1, min(500, 30000/(len(x.Target.Key)+len(cols)+1)))
	return store.EachBatch(f, plan, batch, func(rec arrow.RecordBatch) error {
		n, err := o.compareKeys(ctx, sink.Comparison{Target: x.Target, Table: table, FileKey: x.ID.FileKey, Columns: cols}, rec, plan.Schema, rep)
		rep.Found += n
		return err
	})
}

// compareKeys compares the rows of rec with the target (sink.Driver.Compare,
// c given rec's key and value columns): it returns how many of rec's keys
// the target holds, and adds the rows that the file with key c.FileKey
// last wrote whose values in c.Columns are not rec's to rep.DifferingRows
// and, up to MaxValueDifferences, to rep.Values.
func (o *Operator) compareKeys(ctx context.Context, c sink.Comparison, rec arrow.RecordBatch, schema reader.Schema, rep *VerifyReport) (int64, error) {
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
	return o.st.Driver.Compare(ctx, o.st.DB, c, func(d sink.Differing) error {
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
