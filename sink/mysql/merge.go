package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/sink"
)

// Merge implements sink.Driver as stdsql.Merge does, in the statements
// MariaDB has: it has no INSERT … ON CONFLICT … DO UPDATE … WHERE, and its
// ON DUPLICATE KEY UPDATE assigns left to right, so that a guard reading
// the columns would see values already changed. So the changed rows are
// updated first, by a multi-table UPDATE of the table joined to the stage
// on the key (its WHERE, the guard, reads the stored row before any
// assignment), and then the rows new to the table are inserted, those of
// the stage whose key it lacks. Between the two it passes the point
// inside-move. A key missing when Merge began that another transaction
// stored and committed before the insert, or during it (a duplicate on
// the key: storedMeanwhile), fails it with sink.ErrKeyStoredMeanwhile, so
// that the move, and the classification read before it (Classify), run
// again and find the key stored. Keys
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
		match[i] = d.KeyValue("t."+q(k), t.Kind(k)) + " = " + d.KeyValue(d.AssignedKey("s."+q(k), t.Column(k)), t.Kind(k))
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
			return 0, 0, 0, fmt.Errorf("update rows of %s from the stage: %w", tg.Table, d.oneKey(ctx, tx, tg, conflict, st, err))
		}
	}
	if err := sink.Point(ctx, "inside-move"); err != nil {
		return 0, 0, 0, err
	}
	missing, err := countMissing(ctx, tx, table, st, on)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("count staged rows of %s: %w", tg.Table, err)
	}
	cols := append(slices.Clone(columns), sink.FileColumn, sink.RowColumn)
	list := make([]string, len(cols))
	for i, c := range cols {
		list[i] = q(c)
	}
	inserted, err := changed(ctx, tx, `INSERT INTO `+table+` (`+strings.Join(list, ", ")+`) SELECT s.`+strings.Join(list, ", s.")+
		` FROM `+st+` s WHERE NOT EXISTS (SELECT 1 FROM `+table+` t WHERE `+on+`)`)
	if err != nil {
		err = d.storedMeanwhile(ctx, tx, tg, conflict, st, on, missing, err)
		if !errors.Is(err, sink.ErrKeyStoredMeanwhile) {
			err = d.oneKey(ctx, tx, tg, conflict, st, err)
		}
		return 0, 0, 0, fmt.Errorf("insert staged rows into %s: %w", tg.Table, err)
	}
	if inserted != fresh {
		// A key missing when Merge began that another transaction stored
		// and committed before the insert started (READ COMMITTED: each
		// statement reads what is committed when it starts), which the
		// update wrote or the insert skipped, or one stored then that
		// another transaction deleted: the staged rows' classification
		// (Classify, read before Merge) counts it new or stored where the
		// move did not, and the update did not compare it with the staged
		// row when it was stored. The caller moves again, in a new
		// transaction that finds it as it is.
		return 0, 0, 0, fmt.Errorf("insert staged rows into %s: %w: %d of %d new when the move began, inserted %d",
			tg.Table, sink.ErrKeyStoredMeanwhile, fresh, staged, inserted)
	}
	return staged, fresh, written + inserted, nil
}

// AssignedKey implements stdsql.KeyAssigner: a staged key of a DATETIME or
// TIMESTAMP column of fewer than 6 fractional digits, cast to a DATETIME
// of its digits, which truncates it as the column does when it is stored
// (00:00:00.6 is 00:00:00 to a DATETIME(0)); any other as it is.
func (Driver) AssignedKey(expr string, c *sink.Column) string {
	if c == nil {
		return expr
	}
	typ := strings.ToLower(c.SQLType)
	if !strings.HasPrefix(typ, "datetime") && !strings.HasPrefix(typ, "timestamp") {
		return expr
	}
	digits := "0"
	if i := strings.IndexByte(typ, '('); i >= 0 {
		if j := strings.IndexByte(typ[i:], ')'); j > 0 {
			digits = typ[i+1 : i+j]
		}
	}
	if digits == "6" {
		return expr
	}
	return "CAST(" + expr + " AS DATETIME(" + digits + "))"
}

// oneKey returns err, a failure of Merge's update or insert, as a
// *sink.RowError naming two rows of the file when it is a duplicate key
// (1062) and two staged rows hold keys the table's key columns compare as
// one (their collation: 'a' and 'A' to a case-insensitive one) while the
// stage, and the file's plan, tell them apart: the file repeats a key in
// the table's eyes, which the table refuses whole, on every rerun. Else
// it returns err.
func (d Driver) oneKey(ctx context.Context, tx *sql.Tx, tg sink.Target, conflict []string, stage string, err error) error {
	if number(err) != erDupEntry {
		return err
	}
	db, table := splitName(tg.Table)
	rows, qerr := tx.QueryContext(ctx, `SELECT c.column_name, coalesce(c.collation_name, '') FROM information_schema.columns c
		WHERE c.table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(c.table_name AS BINARY) = CAST(? AS BINARY)`, db, table)
	if qerr != nil {
		return err
	}
	collation := map[string]string{}
	for rows.Next() {
		var name, coll string
		if rows.Scan(&name, &coll) != nil {
			rows.Close()
			return err
		}
		collation[name] = coll
	}
	rows.Close()
	if rows.Err() != nil {
		return err
	}
	match := make([]string, len(conflict))
	shown := make([]string, 0, 2*len(conflict))
	for i, k := range conflict {
		match[i] = "a." + q(k) + " = b." + q(k)
		if c := collation[k]; c != "" {
			match[i] += " COLLATE " + c
		}
		shown = append(shown, "CAST(a."+q(k)+" AS CHAR)", "CAST(b."+q(k)+" AS CHAR)")
	}
	row := q(sink.RowColumn)
	var first, second int64
	vals := make([]sql.NullString, len(shown))
	dest := []any{&first, &second}
	for i := range vals {
		dest = append(dest, &vals[i])
	}
	if tx.QueryRowContext(ctx, `SELECT a.`+row+`, b.`+row+`, `+strings.Join(shown, ", ")+` FROM `+stage+` a JOIN `+stage+` b ON `+
		strings.Join(match, " AND ")+` AND a.`+row+` < b.`+row+` ORDER BY a.`+row+`, b.`+row+` LIMIT 1`).Scan(dest...) != nil {
		return err
	}
	a, b := make([]string, len(conflict)), make([]string, len(conflict))
	for i := range conflict {
		a[i], b[i] = fmt.Sprintf("%q", vals[2*i].String), fmt.Sprintf("%q", vals[2*i+1].String)
	}
	reason := fmt.Sprintf("rows %d and %d of the file hold the keys (%s) and (%s), which %s compares as one key (its columns' collation), so the file repeats a key in the table's eyes: %s",
		first, second, strings.Join(a, ", "), strings.Join(b, ", "), tg.Table, rowError(err).(*sink.RowError).Reason)
	return &sink.RowError{Code: sink.CodeConstraint, Column: conflict[0], Reason: reason, Err: fmt.Errorf("%w: %w", sink.ErrKeysOneToTable, err)}
}

// countMissing counts the staged rows whose key the table lacks.
func countMissing(ctx context.Context, tx *sql.Tx, table, stage, on string) (n int64, err error) {
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM `+stage+` s WHERE NOT EXISTS (SELECT 1 FROM `+table+` t WHERE `+on+`)`).Scan(&n)
	return n, err
}

// storedMeanwhile returns err, the failure of Merge's insert, wrapped in
// sink.ErrKeyStoredMeanwhile when it is a duplicate key (1062) on the
// index of the key (conflict: the primary key, or the unique index over
// exactly those columns or the stored columns keying them) and fewer of
// the staged rows' keys are missing from the table than the missing ones
// counted just before the insert: another transaction stored and
// committed one of them while the insert ran (it waited for that
// transaction's lock on the key, and then met it). Run again, the move
// updates it as a stored key. A duplicate on another unique index (even
// while other keys are stored meanwhile), or on the key among the staged
// rows themselves (a table whose key compares text by a collation the
// stage does not), is the table's refusal, and err says why.
func (d Driver) storedMeanwhile(ctx context.Context, tx *sql.Tx, tg sink.Target, conflict []string, stage, on string, missing int64, err error) error {
	if number(err) != erDupEntry {
		return err
	}
	// InnoDB undid the failed insert alone: the transaction goes on.
	if onKey, kerr := d.keyIndex(ctx, tx, tg.Table, conflict, err); kerr != nil || !onKey {
		return err
	}
	if now, cerr := countMissing(ctx, tx, d.QuoteTable(tg.Table), stage, on); cerr != nil || now >= missing {
		return err
	}
	return fmt.Errorf("%w: %w", sink.ErrKeyStoredMeanwhile, err)
}

// keyIndex says whether dup, a duplicate key error, names the unique
// index of table over exactly the columns conflict (a decimal key column
// by the stored column keying it, markKey), as Describe reads the
// table's keys (uniqueIndexes).
func (d Driver) keyIndex(ctx context.Context, tx *sql.Tx, table string, conflict []string, dup error) (bool, error) {
	var me *mysql.MySQLError
	if !errors.As(dup, &me) {
		return false, nil
	}
	// MariaDB's "Duplicate entry '…' for key 'name'" (MySQL's
	// 'table.name'); the entry may hold the words too.
	i := strings.LastIndex(me.Message, " for key '")
	if i < 0 || !strings.HasSuffix(me.Message, "'") {
		return false, nil
	}
	named := me.Message[i+len(" for key '") : len(me.Message)-1]
	indexes, err := uniqueIndexes(ctx, tx, table)
	if err != nil {
		return false, err
	}
	numbers, err := numberColumns(ctx, tx, table)
	if err != nil {
		return false, err
	}
	keyOf := make(map[string]string, len(numbers))
	for of, col := range numbers {
		keyOf[col] = of
	}
	want := lowered(conflict)
	for _, u := range indexes {
		if u.prefix || named != u.name && !strings.HasSuffix(named, "."+u.name) {
			continue
		}
		if slices.Equal(lowered(u.keyed(keyOf)), want) {
			return true, nil
		}
	}
	return false, nil
}

// lowered returns names in lower case, sorted.
func lowered(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToLower(n)
	}
	slices.Sort(out)
	return out
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
