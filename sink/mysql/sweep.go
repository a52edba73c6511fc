package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// SweepApply implements sink.Driver: a soft sweep is stdsql's; a hard one
// deletes with DELETE t FROM table AS t, since MariaDB before 11.6 takes
// no alias in DELETE FROM. Its conditions are stdsql's (sweepWhere).
func (d Driver) SweepApply(ctx context.Context, tx *sql.Tx, s sink.Sweep, now any) (int64, error) {
	if s.Soft {
		return stdsql.SweepApply(ctx, tx, s, now)
	}
	t, err := d.Describe(ctx, tx, s.Table)
	if err != nil {
		return 0, err
	}
	if t == nil {
		return 0, fmt.Errorf("table %s does not exist", s.Table)
	}
	w, args := sweepWhere(d, s, t)
	res, err := tx.ExecContext(ctx, `DELETE t FROM `+d.QuoteTable(s.Table)+` AS t WHERE `+w, args...)
	if err != nil {
		return 0, fmt.Errorf("sweep rows missing from the snapshot out of %s: %w", s.Table, err)
	}
	return res.RowsAffected()
}

// sweepWhere returns the conditions (and their arguments) of the rows of
// the scope of table t (alias t) that the file does not have, as stdsql's
// hard sweep finds them: in the scope's columns' values, and not written
// by the file (ordinal mode) or without a key in the table s.Seen (alias
// k), keys compared as stdsql.SeenHas compares them.
func sweepWhere(d Driver, s sink.Sweep, t *sink.Table) (string, []any) {
	var conds []string
	var args []any
	for _, term := range s.Scope {
		conds = append(conds, "t."+q(term.Column)+" = ?")
		args = append(args, term.Value)
	}
	if len(s.Key) == 0 {
		conds = append(conds, "NOT t."+q(sink.FileColumn)+" = ?")
		args = append(args, s.FileKey)
	} else {
		conds = append(conds, "NOT "+stdsql.SeenHas(d, t, s.Key, d.QuoteTable(s.Seen)))
	}
	return strings.Join(conds, " AND "), args
}

// SweepKeys implements sink.Driver as stdsql.SweepKeys does, reading each
// key column as text by CAST … AS CHAR (MariaDB has no CAST … AS TEXT):
// it calls each, inside qr, with the key of every live row of the scope.
func (d Driver) SweepKeys(ctx context.Context, qr sink.Querier, s sink.Sweep, each func(key []sql.NullString) error) error {
	sel := make([]string, len(s.Key))
	for i, k := range s.Key {
		sel[i] = "CAST(t." + q(k) + " AS CHAR)"
	}
	conds := []string{"1 = 1"}
	var args []any
	for _, term := range s.Scope {
		conds = append(conds, "t."+q(term.Column)+" = ?")
		args = append(args, term.Value)
	}
	if s.Soft {
		conds = append(conds, "t."+q(sink.DeletedColumn)+" IS NULL")
	}
	rows, err := qr.QueryContext(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+d.QuoteTable(s.Table)+` t WHERE `+strings.Join(conds, " AND "), args...)
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
