package pipeline

import (
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
	"github.com/idemport/idemport/reader"
)

// ExportRejects writes, as CSV on w, the quarantined rows of the one
// operation of fileOrID (a path, matched by content digest, or a file ID;
// table narrows it when the file went to several tables): the replay
// identity columns, then the source file's columns holding the values as
// they were read. Rows already replayed are skipped unless all is set.
func (e *Engine) ExportRejects(ctx context.Context, w io.Writer, fileOrID, table string, all bool) error {
	ops, _, err := e.History(ctx, fileOrID, table)
	if err != nil {
		return err
	}
	if len(ops) != 1 {
		var tables []string
		for _, op := range ops {
			tables = append(tables, op.Table)
		}
		return usagef("%s was imported into %d tables (%s); choose one with --table", fileOrID, len(ops), strings.Join(tables, ", "))
	}
	op := ops[0].Operation
	body, _, err := e.cp.Load(ctx, e.db, checkpoint.Op{Table: op.Table, FileID: op.FileID})
	if err != nil {
		return err
	}
	if body == nil {
		return fmt.Errorf("the plan of %s was removed (gc); its rejects cannot be exported", op.Key)
	}
	var sp storedPlan
	if err := json.Unmarshal(body, &sp); err != nil {
		return fmt.Errorf("read stored plan: %w", err)
	}
	var m canonicalMapping
	if err := json.Unmarshal([]byte(op.Mapping), &m); err != nil {
		return fmt.Errorf("read stored mapping: %w", err)
	}
	rejects, err := e.ledger.Rejects(ctx, e.db, op.Key)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	header := []string{ReplayTable, ReplayFileID, ReplayRow}
	for _, c := range sp.Schema {
		header = append(header, c.Name)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range rejects {
		if r.ReplayedBy != "" && !all {
			continue
		}
		fields, err := splitRow(r, m, sp.Schema)
		if err != nil {
			return fmt.Errorf("row %d: %w", r.Ordinal, err)
		}
		rec := append([]string{op.Table, op.FileID, strconv.FormatInt(r.Ordinal, 10)}, fields...)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// splitRow turns a reject's raw row back into one value per column, as
// text, so it can be edited. A row that had too few fields is padded with
// empty values; fields beyond the columns are dropped.
func splitRow(r ledger.Reject, m canonicalMapping, schema reader.Schema) ([]string, error) {
	out := make([]string, len(schema))
	if r.Row == "" {
		return out, nil
	}
	switch reader.Format(m.Format) {
	case reader.JSONL:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.Row), &obj); err != nil {
			return out, nil // not an object: leave the values for the user to fill in
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
		return out, nil
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
			return out, nil
		}
		fields = rec
	} else {
		fields = strings.Split(row, m.Delimiter)
	}
	copy(out, fields)
	return out, nil
}
