package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/google/uuid"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// The identity columns of an exported rejects file: each corrected row is
// applied under the identity it had in its source file.
const (
	ReplayTable  = "_idemport_table"
	ReplayFileID = "_idemport_file_id"
	ReplayRow    = "_idemport_row"
	// ReplayExtra, numbered from 1, heads the fields a row had beyond the
	// file's columns (or the whole row, when it could not be split).
	ReplayExtra = "_idemport_extra_"
)

// ReplayResult reports a replay of corrected rejects.
type ReplayResult struct {
	File      string        `json:"file"`
	Table     string        `json:"table"`
	FileID    string        `json:"file_id"`
	AttemptID string        `json:"attempt_id"`
	Rows      idemtype.Rows `json:"rows"`
	EventID   string        `json:"event_id,omitempty"` // the rejects.replayed event recorded in the outbox
	Duration  time.Duration `json:"-"`
}

// ErrReplay marks a replay file that cannot be applied as it is; nothing of
// it was applied.
var ErrReplay = errors.New("replay refused")

// Replay applies the corrected rows of path, a CSV file as written by a
// rejects export (the identity columns, then the columns of the source
// file's plan, then ReplayExtra columns, which must be empty), to the target of the completed operation they came from,
// each row under its original identity (file ID and ordinal), as a new
// attempt with trigger "replay". Every row must be one of the operation's
// stored rejects and must now be valid; otherwise nothing is applied.
// Replaying the same rows again changes nothing.
func (o *Operator) Replay(ctx context.Context, path string) (*ReplayResult, error) {
	if err := o.st.Present(); err != nil {
		return nil, err
	}
	started := time.Now()
	key, err := replayKey(path)
	if err != nil {
		return nil, err
	}
	res := &ReplayResult{File: path, Table: key.Table, FileID: key.FileID}
	sp, target, err := o.replayTarget(ctx, path, key)
	if err != nil {
		return res, err
	}
	batches, ordinals, err := readReplay(ctx, path, sp.Schema, target.Key)
	if err != nil {
		return res, err
	}
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	if err := o.checkRejected(ctx, key, ordinals); err != nil {
		return res, err
	}
	return res, o.applyReplay(ctx, path, key, sp.Schema, target, batches, ordinals, res, started)
}

// checkRejected refuses a replay of ordinals unless every one is a stored
// reject of operation key.
func (o *Operator) checkRejected(ctx context.Context, key ledger.Key, ordinals []int64) error {
	missing, err := o.st.Ledger.NotRejected(ctx, o.st.DB, key, ordinals)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: rows %s of %s were not rejected; replay applies only quarantined rows", ErrReplay, ints(missing, 10), key)
	}
	return nil
}

// applyReplay writes batches to target as a new replay attempt on
// operation key, in one transaction with its ledger records and event,
// filling in res.
func (o *Operator) applyReplay(ctx context.Context, path string, key ledger.Key, schema reader.Schema, target sink.Target,
	batches []reader.Batch, ordinals []int64, res *ReplayResult, started time.Time) error {
	host, _ := os.Hostname()
	a := ledger.Attempt{ID: uuid.Must(uuid.NewV7()).String(), Trigger: "replay", Host: host, PID: os.Getpid(),
		ProcStart: proc.Start(os.Getpid()), Path: path}
	res.AttemptID = a.ID
	conn, err := o.st.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	w, err := o.st.Driver.Writer(ctx, conn, target, schema.Arrow())
	if err != nil {
		return err
	}
	defer w.Close()
	tx, err := store.BeginTx(ctx, conn)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := o.recordReplay(ctx, tx, w, key, a, batches, ordinals, res); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit replay: %w", err)
	}
	res.Duration = time.Since(started)
	return nil
}

// recordReplay writes batches with w and records attempt a, the replayed
// rows and the rejects.replayed event, all inside tx.
func (o *Operator) recordReplay(ctx context.Context, tx *store.Txn, w sink.Writer, key ledger.Key, a ledger.Attempt,
	batches []reader.Batch, ordinals []int64, res *ReplayResult) error {
	if err := o.st.Ledger.StartReplay(ctx, tx.Tx, key, a); err != nil {
		return err
	}
	fileKey := pipeline.FileKey(key.FileID)
	for _, b := range batches {
		c, err := w.Write(ctx, tx.Tx, fileKey, b.Record, b.Ordinals)
		if err != nil {
			return err
		}
		res.Rows.Add(c)
	}
	if err := o.st.Ledger.Replayed(ctx, tx.Tx, key, a.ID, ordinals, res.Rows); err != nil {
		return err
	}
	if err := o.st.Ledger.End(ctx, tx, a.ID, "replayed", "", 0, 0); err != nil {
		return err
	}
	var err error
	if res.EventID, err = o.st.RecordEvent(ctx, tx.Tx, pipeline.EventReplayed, key, a, "replayed", res.Rows, nil); err != nil {
		return err
	}
	return nil
}

// replayTarget returns the stored plan of operation key, named by the
// replay file path, and the target its rows go to, as its stored mapping
// says. The operation must be completed and its plan still stored (not
// removed by gc); otherwise the error is ErrReplay.
func (o *Operator) replayTarget(ctx context.Context, path string, key ledger.Key) (store.Plan, sink.Target, error) {
	var sp store.Plan
	op, _, err := o.st.Ledger.Get(ctx, o.st.DB, key)
	if err != nil {
		return sp, sink.Target{}, err
	}
	if op == nil {
		return sp, sink.Target{}, fmt.Errorf("%w: %s names no operation (%s)", ErrReplay, path, key)
	}
	if op.State != ledger.Completed {
		return sp, sink.Target{}, fmt.Errorf("%w: operation %s is %s, not completed; finish its import first", ErrReplay, key, op.State)
	}
	body, _, err := o.st.CP.Load(ctx, o.st.DB, checkpoint.Op{Table: key.Table, FileID: key.FileID})
	if err != nil {
		return sp, sink.Target{}, err
	}
	if body == nil {
		return sp, sink.Target{}, fmt.Errorf("%w: the plan of %s was removed (gc); its rejects cannot be replayed", ErrReplay, key)
	}
	if err := json.Unmarshal(body, &sp); err != nil {
		return sp, sink.Target{}, fmt.Errorf("read stored plan: %w", err)
	}
	var mapping store.Mapping
	if err := json.Unmarshal([]byte(op.Mapping), &mapping); err != nil {
		return sp, sink.Target{}, fmt.Errorf("read stored mapping: %w", err)
	}
	return sp, sink.Target{Table: key.Table, Key: mapping.Key, Version: mapping.VersionBy}, nil
}

// replayKey reads the operation a replay file names; every row must name
// the same one.
func replayKey(path string) (ledger.Key, error) {
	f, err := reader.OpenPath(path, reader.Options{Format: reader.CSV, Types: map[string]idemtype.Type{
		ReplayTable: idemtype.String, ReplayFileID: idemtype.String, ReplayRow: idemtype.Int64}})
	if err != nil {
		return ledger.Key{}, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	h := f.Header()
	for _, c := range []string{ReplayTable, ReplayFileID, ReplayRow} {
		if !slices.Contains(h, c) {
			return ledger.Key{}, fmt.Errorf("%w: %s has no %s column; replay takes a file written by 'idemport rejects export'", ErrReplay, path, c)
		}
	}
	plan, err := f.Scan(context.Background(), reader.ScanOptions{KeepRejects: 1})
	if err != nil {
		return ledger.Key{}, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	keys, err := replayKeys(f, plan)
	if err != nil {
		return ledger.Key{}, err
	}
	if len(keys) != 1 {
		return ledger.Key{}, fmt.Errorf("%w: %s must hold rows of exactly one operation (one table and file ID), it has %d", ErrReplay, path, len(keys))
	}
	for k := range keys {
		return k, nil
	}
	panic("unreachable")
}

// replayKeys returns the operations the rows of the replay file f name.
func replayKeys(f *reader.File, plan *reader.Plan) (map[ledger.Key]bool, error) {
	keys := map[ledger.Key]bool{}
	for b, err := range f.Batches(plan, plan.Partitions, 4096) {
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrReplay, err)
		}
		t := b.Record.Column(plan.Schema.Index(ReplayTable)).(*array.String)
		id := b.Record.Column(plan.Schema.Index(ReplayFileID)).(*array.String)
		for i := 0; i < int(b.Record.NumRows()); i++ {
			keys[ledger.Key{Table: t.Value(i), FileID: id.Value(i)}] = true
		}
		b.Release()
	}
	return keys, nil
}

// readReplay reads the corrected rows, validated against the plan's schema,
// as batches in that schema with the rows' original ordinals. A row that is
// still bad refuses the whole replay.
func readReplay(ctx context.Context, path string, schema reader.Schema, key []string) ([]reader.Batch, []int64, error) {
	types := replayTypes(schema)
	f, err := reader.OpenPath(path, reader.Options{Format: reader.CSV, Types: types, NotNull: append([]string{ReplayRow}, key...)})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	extras, err := replayColumns(path, f.Header(), schema, types)
	if err != nil {
		return nil, nil, err
	}
	plan, err := scanReplay(ctx, path, f)
	if err != nil {
		return nil, nil, err
	}
	batches, ordinals, err := collectReplayBatches(path, f, plan, schema, extras)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(ordinals, func(i, j int) bool { return ordinals[i] < ordinals[j] })
	return batches, ordinals, nil
}

// replayTypes returns the types a replay file is read with: the identity
// columns', then the plan's.
func replayTypes(schema reader.Schema) map[string]idemtype.Type {
	types := map[string]idemtype.Type{ReplayTable: idemtype.String, ReplayFileID: idemtype.String, ReplayRow: idemtype.Int64}
	for _, c := range schema {
		types[c.Name] = c.Type
		if c.Type == idemtype.JSON {
			// An export holds a json column's documents as their JSON
			// text: read the text, check it, and store it as it is.
			types[c.Name] = idemtype.String
		}
	}
	return types
}

// replayColumns checks that header, the replay file's columns, holds the
// identity columns and the plan's, besides ReplayExtra ones, and returns
// those, adding each to types as a string column.
func replayColumns(path string, header []string, schema reader.Schema, types map[string]idemtype.Type) ([]string, error) {
	want := []string{ReplayTable, ReplayFileID, ReplayRow}
	for _, c := range schema {
		want = append(want, c.Name)
	}
	var extras []string
	got := header
	for _, h := range got {
		if strings.HasPrefix(h, ReplayExtra) && !slices.Contains(want, h) {
			extras = append(extras, h)
			types[h] = idemtype.String
		}
	}
	if !sameSet(got, append(slices.Clone(want), extras...)) {
		return nil, fmt.Errorf("%w: %s has columns %s; the plan needs %s", ErrReplay, path, strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return extras, nil
}

// scanReplay plans the replay file f; a bad row refuses the replay, naming
// the first few.
func scanReplay(ctx context.Context, path string, f *reader.File) (*reader.Plan, error) {
	plan, err := f.Scan(ctx, reader.ScanOptions{KeepRejects: 5})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	if plan.Rejected > 0 {
		var bad []string
		for _, r := range plan.Rejects {
			bad = append(bad, fmt.Sprintf("row %d column %q value %q: %s", r.Ordinal, r.Column, r.Value, r.Message))
		}
		return nil, fmt.Errorf("%w: %s of %s %s still bad: %s", ErrReplay, english.Plural(plan.Rejected, "row"), path, english.Verb(plan.Rejected, "is", "are"), strings.Join(bad, "; "))
	}
	return plan, nil
}

// collectReplayBatches reads the rows of f's plan as batches in schema,
// with their ordinals in file order. On an error it releases what it read,
// and the error is ErrReplay: nothing of the file can be applied.
func collectReplayBatches(path string, f *reader.File, plan *reader.Plan, schema reader.Schema, extras []string) ([]reader.Batch, []int64, error) {
	out := schema.Arrow()
	idx := make([]int, len(schema))
	for i, c := range schema {
		idx[i] = plan.Schema.Index(c.Name)
	}
	rowCol := plan.Schema.Index(ReplayRow)
	var batches []reader.Batch
	var ordinals []int64
	seen := map[int64]bool{}
	release := func() {
		for _, b := range batches {
			b.Release()
		}
	}
	for b, err := range f.Batches(plan, plan.Partitions, 4096) {
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("%w: %w", ErrReplay, err)
		}
		cols := make([]arrow.Array, len(idx))
		for i, j := range idx {
			cols[i] = b.Record.Column(j)
		}
		rows := b.Record.Column(rowCol).(*array.Int64)
		if err := checkReplayBatch(b.Record, plan.Schema, schema, extras, rows); err != nil {
			release()
			b.Release()
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrReplay, path, err)
		}
		ords, err := replayOrdinals(path, rows, seen)
		if err != nil {
			release()
			b.Release()
			return nil, nil, err
		}
		batches = append(batches, reader.Batch{Record: array.NewRecordBatch(out, cols, b.Record.NumRows()), Ordinals: ords})
		ordinals = append(ordinals, ords...)
		b.Release()
	}
	return batches, ordinals, nil
}

// replayOrdinals returns the ordinals in rows, adding each to seen; one
// seen before, in this batch or an earlier one, refuses the replay.
func replayOrdinals(path string, rows *array.Int64, seen map[int64]bool) ([]int64, error) {
	ords := make([]int64, rows.Len())
	for i := range ords {
		ords[i] = rows.Value(i)
		if seen[ords[i]] {
			return nil, fmt.Errorf("%w: row %d appears twice in %s", ErrReplay, ords[i], path)
		}
		seen[ords[i]] = true
	}
	return ords, nil
}

// checkReplayBatch checks what the reader cannot: a row's fields beyond
// the file's columns must have been emptied (their values moved into the
// columns), and a json column's values must be JSON documents.
func checkReplayBatch(rec arrow.RecordBatch, read, schema reader.Schema, extras []string, rows *array.Int64) error {
	for _, name := range extras {
		col := rec.Column(read.Index(name))
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) {
				return fmt.Errorf("row %d has a value in %s, a field beyond the columns of its file: move it into a column and leave %s empty (unquoted)",
					rows.Value(i), name, name)
			}
		}
	}
	for _, c := range schema {
		if c.Type != idemtype.JSON {
			continue
		}
		col := rec.Column(read.Index(c.Name)).(*array.String)
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) {
				if _, msg := reader.CheckJSON([]byte(col.Value(i))); msg != "" {
					return fmt.Errorf("row %d column %q value %q: %s", rows.Value(i), c.Name, col.Value(i), msg)
				}
			}
		}
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

func ints(xs []int64, max int) string {
	var parts []string
	for i, x := range xs {
		if i == max {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(xs)))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}
