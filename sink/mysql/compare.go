package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemport/idemport/sink"
)

// Compare implements sink.Driver as stdsql.Compare does (the rows of c
// bound as a common table expression b, joined with the table t on their
// key, first counted and then, with c.Columns, compared value by value in
// t's rows of c.FileKey), in MariaDB's spelling: b is SELECT … UNION ALL
// SELECT …, since a VALUES list of placeholders in a prepared statement
// yields empty strings (MariaDB 10.11); values are read as text by CAST …
// AS CHAR, since there is no CAST … AS TEXT; and text is compared in the
// binary collation of the tables Ensure makes (collation).
func (d Driver) Compare(ctx context.Context, qr sink.Querier, c sink.Comparison, each func(sink.Differing) error) (int64, error) {
	if len(c.Rows) == 0 {
		return 0, nil
	}
	tg, table := c.Target, c.Table
	// A text value of b is of the binary collation of the tables Ensure
	// makes (and idemport's own): b's columns are of the session's
	// collation, which MariaDB will not compare with a column's other one,
	// and the values are compared exactly.
	param := func(name string) string {
		p := d.KeyParam("")
		if col := table.Column(name); col != nil {
			p = d.KeyParam(col.SQLType)
		}
		if p == "CAST(? AS CHAR)" {
			p += " COLLATE " + collation
		}
		return p
	}
	var names, params, on []string
	for i, k := range tg.Key {
		names = append(names, fmt.Sprintf("k%d", i))
		params = append(params, param(k))
		kind := table.Kind(k)
		on = append(on, d.KeyValue("t."+q(k), kind)+" = "+d.KeyValue(fmt.Sprintf("b.k%d", i), kind))
	}
	for j, col := range c.Columns {
		names = append(names, fmt.Sprintf("v%d", j))
		params = append(params, param(col))
	}
	tuple := "SELECT " + strings.Join(params, ", ")
	args := make([]any, 0, len(c.Rows)*len(params)+1)
	for _, row := range c.Rows {
		for _, v := range row {
			args = append(args, d.KeyArg(v))
		}
	}
	with := `WITH b(` + strings.Join(names, ", ") + `) AS (` + strings.TrimSuffix(strings.Repeat(tuple+" UNION ALL ", len(c.Rows)), " UNION ALL ") + `) `
	from := ` FROM b JOIN ` + d.QuoteTable(tg.Table) + ` t ON ` + strings.Join(on, " AND ")
	var present int64
	if err := qr.QueryRowContext(ctx, d.Rebind(with+`SELECT count(*)`+from), args...).Scan(&present); err != nil {
		return 0, fmt.Errorf("look up keys in %s: %w", tg.Table, err)
	}
	if len(c.Columns) == 0 {
		return present, nil
	}
	var sel, differ []string
	for _, k := range tg.Key {
		sel = append(sel, "CAST(t."+q(k)+" AS CHAR)")
	}
	for j, col := range c.Columns {
		kind := table.Kind(col)
		dj := d.Distinct([]string{d.Exact("t."+q(col), kind)}, []string{d.Exact(fmt.Sprintf("b.v%d", j), kind)})
		differ = append(differ, dj)
		sel = append(sel, "CASE WHEN "+dj+" THEN 1 ELSE 0 END", "CAST(t."+q(col)+" AS CHAR)", fmt.Sprintf("CAST(b.v%d AS CHAR)", j))
	}
	query := with + `SELECT ` + strings.Join(sel, ", ") + from +
		` WHERE t.` + q(sink.FileColumn) + ` = ? AND (` + strings.Join(differ, " OR ") + `)`
	rows, err := qr.QueryContext(ctx, d.Rebind(query), append(args, c.FileKey)...)
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
