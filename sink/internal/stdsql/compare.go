package stdsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemport/idemport/sink"
)

// Compare implements sink.Driver.Compare: the rows of c are bound as a
// VALUES list b, joined with the table t on their key, first counted and
// then, with c.Columns, compared value by value in t's rows of c.FileKey.
func Compare(ctx context.Context, q sink.Querier, d sink.Driver, c sink.Comparison, each func(sink.Differing) error) (int64, error) {
	if len(c.Rows) == 0 {
		return 0, nil
	}
	tg, table := c.Target, c.Table
	param := func(name string) string {
		if col := table.Column(name); col != nil {
			return d.KeyParam(col.SQLType)
		}
		return d.KeyParam("")
	}
	var names, params, on []string
	for i, k := range tg.Key {
		names = append(names, fmt.Sprintf("k%d", i))
		params = append(params, param(k))
		kind := table.Kind(k)
		on = append(on, d.KeyValue("t."+d.Quote(k), kind)+" = "+d.KeyValue(fmt.Sprintf("b.k%d", i), kind))
	}
	for j, col := range c.Columns {
		names = append(names, fmt.Sprintf("v%d", j))
		params = append(params, param(col))
	}
	tuple := "(" + strings.Join(params, ", ") + ")"
	args := make([]any, 0, len(c.Rows)*len(params)+1)
	for _, row := range c.Rows {
		for _, v := range row {
			args = append(args, d.KeyArg(v))
		}
	}
	with := `WITH b(` + strings.Join(names, ", ") + `) AS (VALUES ` + strings.TrimSuffix(strings.Repeat(tuple+",", len(c.Rows)), ",") + `) `
	from := ` FROM b JOIN ` + d.QuoteTable(tg.Table) + ` t ON ` + strings.Join(on, " AND ")
	var present int64
	if err := q.QueryRowContext(ctx, d.Rebind(with+`SELECT count(*)`+from), args...).Scan(&present); err != nil {
		return 0, fmt.Errorf("look up keys in %s: %w", tg.Table, err)
	}
	if len(c.Columns) == 0 {
		return present, nil
	}
	var sel, differ []string
	for _, k := range tg.Key {
		sel = append(sel, "CAST(t."+d.Quote(k)+" AS TEXT)")
	}
	for j, col := range c.Columns {
		kind := table.Kind(col)
		dj := d.Distinct([]string{d.Exact("t."+d.Quote(col), kind)}, []string{d.Exact(fmt.Sprintf("b.v%d", j), kind)})
		differ = append(differ, dj)
		sel = append(sel, "CASE WHEN "+dj+" THEN 1 ELSE 0 END", "CAST(t."+d.Quote(col)+" AS TEXT)", fmt.Sprintf("CAST(b.v%d AS TEXT)", j))
	}
	query := with + `SELECT ` + strings.Join(sel, ", ") + from +
		` WHERE t.` + d.Quote(sink.FileColumn) + ` = ? AND (` + strings.Join(differ, " OR ") + `)`
	rows, err := q.QueryContext(ctx, d.Rebind(query), append(args, c.FileKey)...)
	if err != nil {
		return 0, fmt.Errorf("compare the values of %s: %w", tg.Table, err)
	}
	defer rows.Close()
	n := len(c.Columns)
	row := sink.Differing{Key: make([]sql.NullString, len(tg.Key)), Differs: make([]bool, n), Stored: make([]sql.NullString, n), File: make([]sql.NullString, n)}
	flags := make([]int, n)
	dest := make([]any, 0, len(tg.Key)+3*n)
	for i := range row.Key {
		dest = append(dest, &row.Key[i])
	}
	for j := range c.Columns {
		dest = append(dest, &flags[j], &row.Stored[j], &row.File[j])
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return 0, fmt.Errorf("compare the values of %s: %w", tg.Table, err)
		}
		for j, f := range flags {
			row.Differs[j] = f != 0
		}
		if err := each(row); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("compare the values of %s: %w", tg.Table, err)
	}
	return present, nil
}
