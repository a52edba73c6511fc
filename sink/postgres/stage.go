package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Merge implements sink.Driver.Merge as stdsql.Merge does, in one
// INSERT … ON CONFLICT whose RETURNING tells the rows it inserted (their
// xmax is 0) from those it updated (a row ON CONFLICT locked and then
// updated carries the lock in its xmax), so that its counts are what it
// did: a key another transaction stored and committed after the staged
// rows were classified, before the move, is counted updated, not new.
//
// A partitioned table returns no system column from an INSERT, so its new
// rows are counted just before the move, as stdsql.Merge counts them for
// SQLite: a key another import commits in between is then counted new by
// both imports (the table's rows are right).
func (d Driver) Merge(ctx context.Context, tx *sql.Tx, tg sink.Target, stage string, columns []string) (staged, fresh, written int64, err error) {
	var partitioned bool
	if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass($1)), false)`,
		quoteTable(tg.Table)).Scan(&partitioned); err != nil {
		return 0, 0, 0, fmt.Errorf("move staged rows into %s: %w", tg.Table, err)
	}
	inserted := "xmax = 0"
	if partitioned {
		inserted = ""
	}
	return stdsql.Merge(ctx, tx, d, tg, stage, columns, inserted, true)
}

// Classify implements sink.Driver.Classify as stdsql.Classify does, each
// staged value compared as the table's column holds it, as the move's
// ON CONFLICT compares its excluded row.
func (d Driver) Classify(ctx context.Context, tx *sql.Tx, tg sink.Target, stage string, columns []string, group string) (map[int64]idemtype.Rows, error) {
	return stdsql.Classify(ctx, tx, d, tg, stage, columns, group, true)
}

// constraintsSQL lists the CHECK constraints of the table $1 whose
// columns all are in the table $2 with the same type (their name and
// definition) that $2 lacks, and the NOT NULL columns of $1 that are in $2, of any
// type, that are not NOT NULL in $2 (a NULL name and the column).
const constraintsSQL = `SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c
WHERE c.conrelid = to_regclass($1) AND c.contype = 'c'
  AND NOT EXISTS (SELECT 1 FROM pg_constraint x WHERE x.conrelid = to_regclass($2) AND x.conname = c.conname)
  AND NOT EXISTS (
  SELECT 1 FROM unnest(c.conkey) k(n) JOIN pg_attribute t ON t.attrelid = c.conrelid AND t.attnum = k.n
  WHERE NOT EXISTS (SELECT 1 FROM pg_attribute s WHERE s.attrelid = to_regclass($2) AND s.attname = t.attname
    AND NOT s.attisdropped AND s.atttypid = t.atttypid AND s.atttypmod = t.atttypmod))
UNION ALL
SELECT NULL, t.attname FROM pg_attribute t JOIN pg_attribute s ON s.attrelid = to_regclass($2) AND s.attname = t.attname AND NOT s.attisdropped
WHERE t.attrelid = to_regclass($1) AND t.attnum > 0 AND NOT t.attisdropped AND t.attnotnull AND NOT s.attnotnull`

// ConstrainStage implements sink.StageConstrainer: it adds to stage the
// CHECK constraints of target over columns of the same type in both
// (under their names), and NOT NULL to the columns NOT NULL in target.
func (Driver) ConstrainStage(ctx context.Context, tx *sql.Tx, target, stage string) error {
	if err := stageJSON(ctx, tx, target, stage); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, constraintsSQL, quoteTable(target), quoteTable(stage))
	if err != nil {
		return fmt.Errorf("read the constraints of %s: %w", target, err)
	}
	var alters []string
	for rows.Next() {
		var name sql.NullString
		var def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return fmt.Errorf("read the constraints of %s: %w", target, err)
		}
		if name.Valid {
			alters = append(alters, "ADD CONSTRAINT "+q(name.String)+" "+def)
		} else {
			alters = append(alters, "ALTER COLUMN "+q(def)+" SET NOT NULL")
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the constraints of %s: %w", target, err)
	}
	if len(alters) == 0 {
		return nil
	}
	sql := "ALTER TABLE " + quoteTable(stage) + " "
	for i, a := range alters {
		if i > 0 {
			sql += ", "
		}
		sql += a
	}
	if _, err := tx.ExecContext(ctx, sql); err != nil {
		return fmt.Errorf("give staging table %s the constraints of %s: %w", stage, target, err)
	}
	return nil
}

// RewritesRows implements sink.RowRewriter: whether table, or a
// partition of it, has an enabled BEFORE trigger FOR EACH ROW on INSERT
// or UPDATE (tgtype bits: 1 row, 2 before, 4 insert, 16 update), which
// may change or skip the rows the move gives it.
func (Driver) RewritesRows(ctx context.Context, tx *sql.Tx, table string) (bool, error) {
	var yes bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger
		WHERE (tgrelid = to_regclass($1) OR tgrelid IN (SELECT relid FROM pg_partition_tree(to_regclass($1)))) AND NOT tgisinternal
		AND tgenabled <> 'D' AND tgtype & 3 = 3 AND tgtype & 20 <> 0)`, quoteTable(table)).Scan(&yes); err != nil {
		return false, fmt.Errorf("read the triggers of %s: %w", table, err)
	}
	return yes, nil
}

// RowError implements sink.RowErrorer: an integrity constraint (SQLSTATE
// class 23), a data exception (class 22), a trigger's exception or a row
// too big is a *sink.RowError (rowError).
func (Driver) RowError(err error) error { return rowError(err) }
