package sink

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/idemport/idemport/internal/dialect"
)

// StagePrefix begins the names of the staging tables of --atomic imports.
const StagePrefix = "_idemport_stage_"

// Merge moves, inside tx, the rows of the staging table stage (written by
// a Writer for a Target like tg but naming stage) into tg's table: an
// upsert on tg's key with the lineage columns, that leaves unchanged rows
// untouched and, with a version column, does not apply a row older than
// the stored one. columns are the file's columns. It returns the rows of
// the stage and how many of them were new to the table and how many the
// upsert wrote (new plus changed). The stage is left for the caller to
// drop.
func Merge(ctx context.Context, tx *sql.Tx, d dialect.Dialect, tg Target, stage string, columns []string) (staged, fresh, written int64, err error) {
	sw := Sweep{Dialect: d}
	table, st := sw.Quoted(tg.Table), sw.Quoted(stage)
	conflict := []string{FileColumn, RowColumn}
	if !tg.Ordinal() {
		conflict = tg.Key
	}
	match := make([]string, len(conflict))
	for i, k := range conflict {
		match[i] = "t." + dialect.QuoteOne(k) + " = s." + dialect.QuoteOne(k)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN EXISTS (SELECT 1 FROM `+table+` t WHERE `+
		strings.Join(match, " AND ")+`) THEN 0 ELSE 1 END), 0) FROM `+st+` s`).Scan(&staged, &fresh); err != nil {
		return 0, 0, 0, fmt.Errorf("count staged rows of %s: %w", tg.Table, err)
	}
	cols := append(slices.Clone(columns), FileColumn, RowColumn)
	var data, set []string
	for _, c := range columns {
		if !slices.Contains(conflict, c) {
			data = append(data, c)
		}
	}
	for _, c := range data {
		set = append(set, dialect.QuoteOne(c)+" = excluded."+dialect.QuoteOne(c))
	}
	if !tg.Ordinal() {
		set = append(set, dialect.QuoteOne(FileColumn)+" = excluded."+dialect.QuoteOne(FileColumn),
			dialect.QuoteOne(RowColumn)+" = excluded."+dialect.QuoteOne(RowColumn))
	}
	distinct := " IS NOT "
	if d == dialect.Postgres {
		distinct = " IS DISTINCT FROM "
	}
	q := `INSERT INTO ` + table + ` (` + dialect.QuoteList(cols, "") + `) SELECT ` + dialect.QuoteList(cols, "") + ` FROM ` + st +
		` WHERE true ON CONFLICT (` + dialect.QuoteList(conflict, "") + `) `
	if len(data) == 0 {
		q += `DO NOTHING`
	} else {
		guard := []string{"(" + dialect.QuoteList(data, table+".") + ")" + distinct + "(" + dialect.QuoteList(data, "excluded.") + ")"}
		if d == dialect.Postgres && len(data) > 1 {
			guard[0] = "ROW(" + dialect.QuoteList(data, table+".") + ")" + distinct + "ROW(" + dialect.QuoteList(data, "excluded.") + ")"
		}
		if tg.Version != "" {
			stored, v := table+"."+dialect.QuoteOne(tg.Version), "excluded."+dialect.QuoteOne(tg.Version)
			guard = append(guard, "NOT ("+stored+" IS NOT NULL AND ("+v+" IS NULL OR "+v+" < "+stored+"))")
		}
		q += `DO UPDATE SET ` + strings.Join(set, ", ") + ` WHERE ` + strings.Join(guard, " AND ")
	}
	res, err := tx.ExecContext(ctx, q)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("move staged rows into %s: %w", tg.Table, err)
	}
	if written, err = res.RowsAffected(); err != nil {
		return 0, 0, 0, err
	}
	return staged, fresh, written, nil
}
