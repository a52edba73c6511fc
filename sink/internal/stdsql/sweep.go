package stdsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// sweepWhere returns the conditions (and their arguments) of the rows of the
// scope of table t that are live and that the file does not have (missing)
// or has. Keys compare as the driver compares t's keys (KeyValue): a
// decimal key the file has in another text (1.50 for a stored 1.5, whose
// row an older --version-col kept) is the file's; and a file's timestamp
// key as t's column holds it (SeenHas).
func sweepWhere(s sink.Sweep, t *sink.Table, missing bool) (string, []any) {
	var conds []string
	var args []any
	for _, t := range s.Scope {
		conds = append(conds, "t."+s.Driver.Quote(t.Column)+" = ?")
		args = append(args, t.Value)
	}
	if s.Soft {
		if missing {
			conds = append(conds, "t."+s.Driver.Quote(sink.DeletedColumn)+" IS NULL")
		} else {
			conds = append(conds, "t."+s.Driver.Quote(sink.DeletedColumn)+" IS NOT NULL")
		}
	}
	var in string
	if len(s.Key) == 0 {
		in = "t." + s.Driver.Quote(sink.FileColumn) + " = ?"
		args = append(args, s.FileKey)
	} else {
		in = SeenHas(s.Driver, t, s.Key, s.Quoted(s.Seen))
	}
	if missing {
		in = "NOT " + in
	}
	conds = append(conds, in)
	return strings.Join(conds, " AND "), args
}

// sweepLive returns the conditions of the live rows of the scope.
func sweepLive(s sink.Sweep) (string, []any) {
	conds := []string{"1 = 1"}
	var args []any
	for _, t := range s.Scope {
		conds = append(conds, "t."+s.Driver.Quote(t.Column)+" = ?")
		args = append(args, t.Value)
	}
	if s.Soft {
		conds = append(conds, "t."+s.Driver.Quote(sink.DeletedColumn)+" IS NULL")
	}
	return strings.Join(conds, " AND "), args
}

// SweepCount implements sink.Driver.SweepCount: it returns, inside q, how many live rows of the scope the sweep would
// remove, and how many live rows the scope holds.
func SweepCount(ctx context.Context, q sink.Querier, s sink.Sweep) (missing, live int64, err error) {
	t, err := describeTarget(ctx, q, s.Driver, sink.Target{Table: s.Table})
	if err != nil {
		return 0, 0, err
	}
	w, args := sweepWhere(s, t, true)
	if err := q.QueryRowContext(ctx, s.Driver.Rebind(`SELECT count(*) FROM `+s.Quoted(s.Table)+` t WHERE `+w), args...).Scan(&missing); err != nil {
		return 0, 0, fmt.Errorf("count rows missing from the snapshot: %w", err)
	}
	if live, err = SweepLive(ctx, q, s); err != nil {
		return 0, 0, err
	}
	return missing, live, nil
}

// SweepLive implements sink.Driver.SweepLive: it returns, inside q, how many live rows the scope holds.
func SweepLive(ctx context.Context, q sink.Querier, s sink.Sweep) (int64, error) {
	var n int64
	w, args := sweepLive(s)
	if err := q.QueryRowContext(ctx, s.Driver.Rebind(`SELECT count(*) FROM `+s.Quoted(s.Table)+` t WHERE `+w), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows in the snapshot's scope: %w", err)
	}
	return n, nil
}

// SweepApply implements sink.Driver.SweepApply: it deletes (or marks, with the time now) the live rows of the scope
// that the file does not have, clears the marks of rows it has, inside tx,
// and returns how many rows it deleted or marked.
func SweepApply(ctx context.Context, tx *sql.Tx, s sink.Sweep, now any) (int64, error) {
	table, err := describeTarget(ctx, tx, s.Driver, sink.Target{Table: s.Table})
	if err != nil {
		return 0, err
	}
	w, args := sweepWhere(s, table, true)
	t := s.Quoted(s.Table)
	var res sql.Result
	if s.Soft {
		res, err = tx.ExecContext(ctx, s.Driver.Rebind(`UPDATE `+t+` AS t SET `+s.Driver.Quote(sink.DeletedColumn)+` = ? WHERE `+w), append([]any{now}, args...)...)
	} else {
		res, err = tx.ExecContext(ctx, s.Driver.Rebind(`DELETE FROM `+t+` AS t WHERE `+w), args...)
	}
	if err != nil {
		return 0, fmt.Errorf("sweep rows missing from the snapshot out of %s: %w", s.Table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if s.Soft {
		w, args := sweepWhere(s, table, false)
		if _, err := tx.ExecContext(ctx, s.Driver.Rebind(`UPDATE `+t+` AS t SET `+s.Driver.Quote(sink.DeletedColumn)+` = NULL WHERE `+w), args...); err != nil {
			return 0, fmt.Errorf("clear the deletion marks of rows back in the snapshot: %w", err)
		}
	}
	return n, nil
}

// SweepUnmark implements sink.Driver.SweepUnmark: it clears, inside tx, the deletion marks of the rows of the scope
// that a soft sweep marked with mark (the value Apply was given as now),
// making them live again, and returns how many it cleared.
func SweepUnmark(ctx context.Context, tx *sql.Tx, s sink.Sweep, mark any) (int64, error) {
	conds := []string{"t." + s.Driver.Quote(sink.DeletedColumn) + " = ?"}
	args := []any{mark}
	for _, t := range s.Scope {
		conds = append(conds, "t."+s.Driver.Quote(t.Column)+" = ?")
		args = append(args, t.Value)
	}
	res, err := tx.ExecContext(ctx, s.Driver.Rebind(`UPDATE `+s.Quoted(s.Table)+` AS t SET `+s.Driver.Quote(sink.DeletedColumn)+` = NULL WHERE `+strings.Join(conds, " AND ")), args...)
	if err != nil {
		return 0, fmt.Errorf("clear the deletion marks of the snapshot's sweep in %s: %w", s.Table, err)
	}
	return res.RowsAffected()
}

// EnsureDeleted implements sink.Driver.EnsureDeleted: it adds sink.DeletedColumn to table inside tx when it lacks it.
func EnsureDeleted(ctx context.Context, tx *sql.Tx, d sink.Driver, table string) error {
	t, err := d.Describe(ctx, tx, table)
	if err != nil {
		return err
	}
	if t == nil || t.Column(sink.DeletedColumn) != nil {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+d.QuoteTable(table)+` ADD COLUMN `+d.Quote(sink.DeletedColumn)+` `+d.TimeType()); err != nil {
		return fmt.Errorf("add column %s to %s: %w", sink.DeletedColumn, table, err)
	}
	return nil
}

// EnsureSeen implements sink.Driver.EnsureSeen: it creates, inside tx, the table a Sweep by key reads as Seen:
// the key columns of schema, keyed by row ordinal (a Writer of an ordinal
// sink.Target copies batches into it without an upsert), with an index on the
// key, as the driver compares it (KeyValue), for the sweep's anti-join (a
// database that runs it as a correlated subquery looks each row's key up
// in it). A driver that is a Collator indexes a key column as it compares
// it with target's column (its Collation), which SeenHas does.
func EnsureSeen(ctx context.Context, tx *sql.Tx, d sink.Driver, table, target string, key []string, schema *arrow.Schema) error {
	if err := d.Ensure(ctx, tx, sink.Target{Table: table}, schema); err != nil {
		return err
	}
	_, name, err := d.Limits().SplitTable(table)
	if err != nil {
		return err
	}
	t, err := d.Describe(ctx, tx, target)
	if err != nil {
		return err
	}
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.KeyValue(d.Quote(k), idemtype.TypeOf(schema.Field(schema.FieldIndices(k)[0])))
		if c, ok := d.(Collator); ok && t != nil {
			cols[i] = c.Collate(cols[i], t.Column(k))
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS `+d.Quote(name+"_key")+` ON `+d.QuoteTable(table)+` (`+strings.Join(cols, ", ")+`)`); err != nil {
		return fmt.Errorf("index the snapshot's keys in %s: %w", table, err)
	}
	return nil
}

// ForgetOrdinals implements sink.Driver.ForgetOrdinals: it clears, inside tx, the ordinal (sink.RowColumn) of the rows of
// table that the file with key fileKey last wrote, keeping their file key,
// and returns how many it changed. A new version of the file (--replace)
// then writes over them whatever its rows' ordinals, as over rows of
// unknown lineage, instead of finding them written by a later row of the
// same file; and a Sweep scoped to their file key still finds those the
// new version lacks. A table that does not exist has none.
func ForgetOrdinals(ctx context.Context, tx *sql.Tx, d sink.Driver, table string, fileKey int64) (int64, error) {
	t, err := d.Describe(ctx, tx, table)
	if err != nil || t == nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, d.Rebind(`UPDATE `+d.QuoteTable(table)+` SET `+d.Quote(sink.RowColumn)+` = NULL WHERE `+d.Quote(sink.FileColumn)+` = ?`), fileKey)
	if err != nil {
		return 0, fmt.Errorf("forget the ordinals of the rows of file %d in %s: %w", fileKey, table, err)
	}
	return res.RowsAffected()
}

// SweepKeys implements sink.Driver.SweepKeys: it calls each, inside q,
// with the key of every live row of the scope, each column as text.
func SweepKeys(ctx context.Context, q sink.Querier, s sink.Sweep, each func(key []sql.NullString) error) error {
	sel := make([]string, len(s.Key))
	for i, k := range s.Key {
		sel[i] = "CAST(t." + s.Driver.Quote(k) + " AS TEXT)"
	}
	w, args := sweepLive(s)
	rows, err := q.QueryContext(ctx, s.Driver.Rebind(`SELECT `+strings.Join(sel, ", ")+` FROM `+s.Quoted(s.Table)+` t WHERE `+w), args...)
	if err != nil {
		return fmt.Errorf("read the keys of %s: %w", s.Table, err)
	}
	defer rows.Close()
	vals := make([]sql.NullString, len(sel))
	ptrs := make([]any, len(sel))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := each(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// CountFile implements sink.Driver.CountFile: it returns, inside q, how
// many rows of table the file with key fileKey last wrote.
func CountFile(ctx context.Context, q sink.Querier, d sink.Driver, table string, fileKey int64) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, d.Rebind(`SELECT count(*) FROM `+d.QuoteTable(table)+
		` WHERE `+d.Quote(sink.FileColumn)+` = ?`), fileKey).Scan(&n)
	return n, err
}
