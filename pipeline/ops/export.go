package ops

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
)

// ExportRejects writes, as CSV on w, the quarantined rows of the one
// operation of fileOrID (a path, matched by content digest, or a file ID;
// table narrows it when the file went to several tables): the replay
// identity columns, then the source file's columns holding the values as
// they were read (a null as an empty unquoted field, an empty string as
// "", a json column's JSON document as the import stores it), then the
// fields rows had beyond those columns, in ReplayExtra columns. Replay reads
// it back to the same values. Rows already replayed are skipped unless all
// is set.
func (o *Operator) ExportRejects(ctx context.Context, w io.Writer, fileOrID, table string, all bool) error {
	if err := o.st.Present(); err != nil {
		return err
	}
	op, err := o.exportedOperation(ctx, fileOrID, table)
	if err != nil {
		return err
	}
	sp, m, err := o.exportedPlan(ctx, op)
	if err != nil {
		return err
	}
	rejects, err := o.st.Ledger.Rejects(ctx, o.st.DB, op.Key)
	if err != nil {
		return err
	}
	rows, extras, err := exportRows(rejects, m, sp.Schema, all)
	if err != nil {
		return err
	}
	return writeExport(w, op, sp.Schema, rows, extras)
}

// exportedOperation returns the one operation of fileOrID (in table, when
// given); one in several tables is a usage error asking for --table.
func (o *Operator) exportedOperation(ctx context.Context, fileOrID, table string) (ledger.Operation, error) {
	ops, err := o.st.Operations(ctx, fileOrID, table)
	if err != nil {
		return ledger.Operation{}, err
	}
	if len(ops) != 1 {
		var tables []string
		for _, op := range ops {
			tables = append(tables, op.Table)
		}
		return ledger.Operation{}, store.Usagef("%s was imported into %d tables (%s); choose one with --table", fileOrID, len(ops), strings.Join(tables, ", "))
	}
	return ops[0], nil
}

// exportedPlan returns the stored plan and mapping of op; a plan removed
// by gc is an error.
func (o *Operator) exportedPlan(ctx context.Context, op ledger.Operation) (store.Plan, store.Mapping, error) {
	var sp store.Plan
	var m store.Mapping
	body, _, err := o.st.CP.Load(ctx, o.st.DB, checkpoint.Op{Table: op.Table, FileID: op.FileID})
	if err != nil {
		return sp, m, err
	}
	if body == nil {
		return sp, m, fmt.Errorf("the plan of %s was removed (gc); its rejects cannot be exported", op.Key)
	}
	if err := json.Unmarshal(body, &sp); err != nil {
		return sp, m, fmt.Errorf("read stored plan: %w", err)
	}
	if err := json.Unmarshal([]byte(op.Mapping), &m); err != nil {
		return sp, m, fmt.Errorf("read stored mapping: %w", err)
	}
	return sp, m, nil
}

// exportRow is one reject as exported: its ordinal, its fields in the
// plan's columns and those beyond them.
type exportRow struct {
	ordinal     int64
	cols, extra []reader.Field
}

// exportRows returns the rejects to export (all, or those not replayed
// yet) as rows of schema, and the most fields beyond its columns any has.
func exportRows(rejects []ledger.Reject, m store.Mapping, schema reader.Schema, all bool) ([]exportRow, int, error) {
	var rows []exportRow
	extras := 0
	for _, r := range rejects {
		if r.ReplayedBy != "" && !all {
			continue
		}
		var cols, extra []reader.Field
		if r.Fields != "" {
			var err error
			cols, extra, err = reader.RejectFields(r.Fields, reader.Format(m.Format), schema)
			if err != nil {
				return nil, 0, fmt.Errorf("row %d: %w", r.Ordinal, err)
			}
		} else {
			cols = legacyFields(r, m, schema)
		}
		extras = max(extras, len(extra))
		rows = append(rows, exportRow{r.Ordinal, cols, extra})
	}
	return rows, extras, nil
}

// writeExport writes rows of operation op to w as CSV: a header of the
// identity columns, schema's and extras ReplayExtra ones, then each row
// under its identity, padded with nulls.
func writeExport(w io.Writer, op ledger.Operation, schema reader.Schema, rows []exportRow, extras int) error {
	bw := bufio.NewWriter(w)
	header := []string{ReplayTable, ReplayFileID, ReplayRow}
	for _, c := range schema {
		header = append(header, c.Name)
	}
	for i := range extras {
		header = append(header, ReplayExtra+strconv.Itoa(i+1))
	}
	rec := make([]reader.Field, len(header))
	for i, h := range header {
		rec[i] = reader.Field{Text: h}
	}
	writeCSV(bw, rec)
	for _, r := range rows {
		rec = append(rec[:0], reader.Field{Text: op.Table}, reader.Field{Text: op.FileID}, reader.Field{Text: strconv.FormatInt(r.ordinal, 10)})
		rec = append(rec, r.cols...)
		rec = append(rec, r.extra...)
		for len(rec) < len(header) {
			rec = append(rec, reader.Field{Null: true})
		}
		writeCSV(bw, rec)
	}
	return bw.Flush()
}

// writeCSV writes one CSV record the way the reader reads it back: a null
// field is empty and unquoted, an empty string is "", and a field holding a
// delimiter, quote, line break or leading or trailing space is quoted.
func writeCSV(w *bufio.Writer, rec []reader.Field) {
	for i, f := range rec {
		if i > 0 {
			w.WriteByte(',')
		}
		if f.Null {
			continue
		}
		if f.Text != "" && !strings.ContainsAny(f.Text, ",\"\r\n") && strings.TrimSpace(f.Text) == f.Text {
			w.WriteString(f.Text)
			continue
		}
		w.WriteByte('"')
		w.WriteString(strings.ReplaceAll(f.Text, `"`, `""`))
		w.WriteByte('"')
	}
	w.WriteByte('\n')
}

// legacyFields splits the raw row of a reject stored by an older version,
// which kept no fields: empty values come back as nulls, extra fields are
// dropped, and Parquet and Arrow rows have no values.
func legacyFields(r ledger.Reject, m store.Mapping, schema reader.Schema) []reader.Field {
	out := make([]reader.Field, len(schema))
	for i, v := range splitRow(r, m, schema) {
		out[i] = reader.Field{Text: v, Null: v == ""}
	}
	return out
}

// splitRow turns a reject's raw row back into one value per column, as
// text, so it can be edited. A row that had too few fields is padded with
// empty values; fields beyond the columns are dropped.
func splitRow(r ledger.Reject, m store.Mapping, schema reader.Schema) []string {
	out := make([]string, len(schema))
	if r.Row == "" {
		return out
	}
	switch reader.Format(m.Format) {
	case reader.JSONL:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.Row), &obj); err != nil {
			return out // not an object: leave the values for the user to fill in
		}
		for i, c := range schema {
			v, ok := obj[c.Name]
			if !ok || string(v) == "null" {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				out[i] = s
			} else {
				out[i] = string(v)
			}
		}
		return out
	}
	row := strings.TrimRight(r.Row, "\r\n")
	var fields []string
	if m.Quotes {
		cr := csv.NewReader(bytes.NewReader([]byte(row)))
		cr.LazyQuotes = true
		cr.FieldsPerRecord = -1
		if m.Delimiter != "" {
			cr.Comma = rune(m.Delimiter[0])
		}
		rec, err := cr.Read()
		if err != nil && err != io.EOF {
			return out
		}
		fields = rec
	} else {
		fields = strings.Split(row, m.Delimiter)
	}
	copy(out, fields)
	return out
}
