package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/idemport/idemport/sink"
)

// Merge implements sink.Driver as stdsql.Merge does, in the statements
// MariaDB has: it has no INSERT … ON CONFLICT … DO UPDATE … WHERE, and its
// ON DUPLICATE KEY UPDATE assigns left to right, so that a guard reading
// the columns would see values already changed. So the changed rows are
// updated first, by a multi-table UPDATE of the table joined to the stage
// on the key (its WHERE, the guard, reads the stored row before any
// assignment), and then the rows new to the table are inserted, those of
// the stage whose key it lacks; when staged rows are left, the update
// runs again, for a key another import committed between the two (as the
// Writer's does). Between the two it passes the point inside-move. Keys
// compare by KeyValue (a decimal by its number), and a changed row takes
// the staged row's values, the text of its decimal key columns included
// (sink.Rewritten).
func (d Driver) Merge(ctx context.Context, tx *sql.Tx, tg sink.Target, stage string, columns []string) (staged, fresh, written int64, err error) {
	t, err := d.Describe(ctx, tx, tg.Table)
	if err != nil {
		return 0, 0, 0, err
	}
	if t == nil {
		return 0, 0, 0, fmt.Errorf("table %s does not exist", tg.Table)
	}
	table, st := d.QuoteTable(tg.Table), d.QuoteTable(stage)
	conflict := tg.Key
	if tg.Ordinal() {
		conflict = []string{sink.FileColumn, sink.RowColumn}
	}
	match := make([]string, len(conflict))
	for i, k := range conflict {
		match[i] = d.KeyValue("t."+q(k), t.Kind(k)) + " = " + d.KeyValue("s."+q(k), t.Kind(k))
	}
	on := strings.Join(match, " AND ")
	if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN EXISTS (SELECT 1 FROM `+table+` t WHERE `+
		on+`) THEN 0 ELSE 1 END), 0) FROM `+st+` s`).Scan(&staged, &fresh); err != nil {
		return 0, 0, 0, fmt.Errorf("count staged rows of %s: %w", tg.Table, err)
	}
	data := sink.Rewritten(t, tg, columns)
	var update string
	if len(data) > 0 {
		set := make([]string, 0, len(data)+2)
		stored, incoming := make([]string, len(data)), make([]string, len(data))
		for i, c := range data {
			set = append(set, "t."+q(c)+" = s."+q(c))
			stored[i], incoming[i] = d.Exact("t."+q(c), t.Kind(c)), d.Exact("s."+q(c), t.Kind(c))
		}
		if !tg.Ordinal() {
			for _, c := range []string{sink.FileColumn, sink.RowColumn} {
				set = append(set, "t."+q(c)+" = s."+q(c))
			}
		}
		guard := []string{d.Distinct(stored, incoming)}
		if tg.Version != "" {
			sv, v := "t."+q(tg.Version), "s."+q(tg.Version)
			guard = append(guard, "NOT ("+sv+" IS NOT NULL AND ("+v+" IS NULL OR "+v+" < "+sv+"))")
		}
		update = `UPDATE ` + table + ` t JOIN ` + st + ` s ON ` + on + ` SET ` + strings.Join(set, ", ") +
			` WHERE ` + strings.Join(guard, " AND ")
		if written, err = changed(ctx, tx, update); err != nil {
			return 0, 0, 0, fmt.Errorf("update rows of %s from the stage: %w", tg.Table, err)
		}
	}
	if err := sink.Point(ctx, "inside-move"); err != nil {
		return 0, 0, 0, err
	}
	cols := append(slices.Clone(columns), sink.FileColumn, sink.RowColumn)
	list := make([]string, len(cols))
	for i, c := range cols {
		list[i] = q(c)
	}
	inserted, err := changed(ctx, tx, `INSERT INTO `+table+` (`+strings.Join(list, ", ")+`) SELECT s.`+strings.Join(list, ", s.")+
		` FROM `+st+` s WHERE NOT EXISTS (SELECT 1 FROM `+table+` t WHERE `+on+`)`)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("insert staged rows into %s: %w", tg.Table, storedMeanwhile(ctx, tx, table, st, on, fresh, err))
	}
	if update != "" && staged > written+inserted {
		// A key another transaction stored and committed after the
		// update looked for it (READ COMMITTED: each statement reads what
		// is committed when it starts) is one the insert finds and skips:
		// neither statement wrote it. The update again reads it (as it
		// locks, the latest committed row) and writes it when it is not
		// older. A key committed during the insert fails it with a
		// duplicate key (storedMeanwhile), and the caller moves again.
		again, err := changed(ctx, tx, update)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("update rows of %s from the stage: %w", tg.Table, err)
		}
		written += again
	}
	return staged, fresh, written + inserted, nil
}

// storedMeanwhile returns err, the failure of Merge's insert, wrapped in
// sink.ErrKeyStoredMeanwhile when it is a duplicate key (1062) and fewer
// of the staged rows' keys are missing from the table than the fresh
// ones when Merge began: another transaction stored and committed one of
// them while the insert ran (it waited for that transaction's lock on
// the key, and then met it). Run again, the move updates it as a stored
// key. A duplicate on another unique index, or on the key among the
// staged rows themselves (a table whose key compares text by a collation
// the stage does not), leaves the count as it was, and err says why the
// table refuses the rows; so does the rare count that another
// transaction's deletions bring back where it was.
func storedMeanwhile(ctx context.Context, tx *sql.Tx, table, stage, on string, fresh int64, err error) error {
	if number(err) != erDupEntry {
		return err
	}
	var now int64
	// InnoDB undid the failed insert alone: the transaction goes on.
	if cerr := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+stage+` s WHERE NOT EXISTS (SELECT 1 FROM `+table+` t WHERE `+
		on+`)`).Scan(&now); cerr != nil || now >= fresh {
		return err
	}
	return fmt.Errorf("%w: %w", sink.ErrKeyStoredMeanwhile, err)
}

// changed runs query inside tx and returns the rows it changed; an empty
// query changes none.
func changed(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	if query == "" {
		return 0, nil
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
