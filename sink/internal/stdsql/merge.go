package stdsql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// Merge moves, inside tx, the rows of the staging table stage (written by
// a Writer for a sink.Target like tg but naming stage) into tg's table: an
// upsert on tg's key with the lineage columns, that leaves unchanged rows
// untouched and, with a version column, does not apply a row older than
// the stored one. Keys compare as the driver compares them (KeyValue: a
// decimal key by its number), and a changed row takes the staged row's
// values, the text of its decimal key columns included (sink.Rewritten).
// columns are the file's columns. It returns the rows of the stage and
// how many of them the upsert inserted and how many it wrote (inserted
// plus changed). The stage is left for the caller to drop.
//
// inserted, when not empty, is an SQL expression over a row the upsert
// wrote, true when it inserted the row (PostgreSQL: xmax = 0), and the
// counts are the upsert's own (RETURNING), so that a key another
// transaction stored and committed after the caller classified the staged
// rows (Classify) is counted as the upsert met it. Empty, the new rows
// are counted by a statement just before the upsert, which only a
// database whose write transactions exclude each other (SQLite) may do;
// it matches a stored key with the staged one as Classify does
// (stagedKeyMatch: with assigned, a timestamp(0) key's rounded second).
// Of a table whose triggers may skip rows (sink.RowRewriter), the staged
// keys still missing after the upsert are then not counted inserted.
//
// assigned, when true, casts each staged value of a column whose type
// the driver does not know (Kind Unknown: PostgreSQL's enums, domains and
// other types the stage holds as text or as the file's type) to the
// column's SQL type, as Classify compares it: an INSERT assigns no text
// to an enum without an explicit cast, and a value the type refuses is
// then the table's refusal (a data exception), not a failure of the
// statement. Columns of known kinds are assigned as they are, so that a
// value too long for a varchar(n) is refused, never cut.
func Merge(ctx context.Context, tx *sql.Tx, d sink.Driver, tg sink.Target, stage string, columns []string, inserted string, assigned bool) (staged, fresh, written int64, err error) {
	t, err := describeTarget(ctx, tx, d, tg)
	if err != nil {
		return 0, 0, 0, err
	}
	table, st := d.QuoteTable(tg.Table), d.QuoteTable(stage)
	conflict := conflictColumns(tg)
	if inserted == "" {
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN EXISTS (SELECT 1 FROM `+table+` t WHERE `+
			stagedKeyMatch(d, t, conflict, assigned)+`) THEN 0 ELSE 1 END), 0) FROM `+st+` s`).Scan(&staged, &fresh); err != nil {
			return 0, 0, 0, fmt.Errorf("count staged rows of %s: %w", tg.Table, err)
		}
	}
	cols := append(slices.Clone(columns), sink.FileColumn, sink.RowColumn)
	data := sink.Rewritten(t, tg, columns)
	set := make([]string, 0, len(data)+2)
	for _, c := range data {
		set = append(set, d.Quote(c)+" = excluded."+d.Quote(c))
	}
	if !tg.Ordinal() {
		set = append(set, d.Quote(sink.FileColumn)+" = excluded."+d.Quote(sink.FileColumn),
			d.Quote(sink.RowColumn)+" = excluded."+d.Quote(sink.RowColumn))
	}
	target := make([]string, len(conflict))
	for i, k := range conflict {
		target[i] = d.KeyValue(d.Quote(k), t.Kind(k))
	}
	values := prefixed(d, cols, "")
	if assigned {
		for i, c := range cols {
			if col := t.Column(c); col != nil && col.Kind == idemtype.Unknown && col.SQLType != "" {
				values[i] = "CAST(" + values[i] + " AS " + col.SQLType + ")"
			}
		}
	}
	q := `INSERT INTO ` + table + ` (` + quoteList(d, cols, "") + `) SELECT ` + strings.Join(values, ", ") + ` FROM ` + st +
		` WHERE true ON CONFLICT (` + strings.Join(target, ", ") + `) `
	if len(data) == 0 {
		q += `DO NOTHING`
	} else {
		guard := []string{d.Distinct(exact(d, t, data, table+"."), exact(d, t, data, "excluded."))}
		if tg.Version != "" {
			stored, v := table+"."+d.Quote(tg.Version), "excluded."+d.Quote(tg.Version)
			guard = append(guard, "NOT ("+stored+" IS NOT NULL AND ("+v+" IS NULL OR "+v+" < "+stored+"))")
		}
		q += `DO UPDATE SET ` + strings.Join(set, ", ") + ` WHERE ` + strings.Join(guard, " AND ")
	}
	if inserted != "" {
		// One statement: the stage's rows counted in the snapshot the
		// upsert reads, the written ones as it wrote them.
		if err := tx.QueryRowContext(ctx, `WITH moved AS (`+q+` RETURNING (`+inserted+`) AS fresh) SELECT (SELECT count(*) FROM `+st+
			`), coalesce(sum(CASE WHEN fresh THEN 1 ELSE 0 END), 0), count(*) FROM moved`).Scan(&staged, &fresh, &written); err != nil {
			return 0, 0, 0, fmt.Errorf("move staged rows into %s: %w", tg.Table, err)
		}
		return staged, fresh, written, nil
	}
	res, err := tx.ExecContext(ctx, q)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("move staged rows into %s: %w", tg.Table, err)
	}
	if written, err = res.RowsAffected(); err != nil {
		return 0, 0, 0, err
	}
	// A trigger that skipped a new row (RAISE(IGNORE), RETURN NULL) left
	// its key missing: it was counted new, and the move did not insert it.
	if rw, ok := d.(sink.RowRewriter); ok {
		yes, err := rw.RewritesRows(ctx, tx, tg.Table)
		if err != nil {
			return 0, 0, 0, err
		}
		if yes {
			var skipped int64
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+st+` s WHERE NOT EXISTS (SELECT 1 FROM `+table+` t WHERE `+
				stagedKeyMatch(d, t, conflict, assigned)+`)`).Scan(&skipped); err != nil {
				return 0, 0, 0, fmt.Errorf("count staged rows of %s: %w", tg.Table, err)
			}
			fresh -= skipped
		}
	}
	return staged, fresh, written, nil
}

// Classify says, before Merge moves the staged rows of stage into tg's
// table in the same transaction, what the move does to each of them, by
// group: Read counts the group's staged rows, each of which is new to the
// table (Inserted), changed (Updated), identical in the file's columns
// (Unchanged) or, by tg.Version, older than the stored row (Stale). group
// is an SQL expression over the staged row (alias s) giving an integer;
// columns are the file's columns. It uses the predicates of Merge's upsert.
//
// assigned, when true, compares each staged value as the table's column
// holds it (cast to its SQL type), as an upsert whose excluded row holds
// the values already assigned to the table's columns (PostgreSQL's)
// compares it: a staged 1.5 is unchanged against a numeric(10,2) column's
// 1.50, a staged timestamp of microseconds against a timestamp(0) column's
// rounded second, so that the classification is what the move then does.
func Classify(ctx context.Context, tx *sql.Tx, d sink.Driver, tg sink.Target, stage string, columns []string, group string, assigned bool) (map[int64]idemtype.Rows, error) {
	t, err := describeTarget(ctx, tx, d, tg)
	if err != nil {
		return nil, err
	}
	conflict := conflictColumns(tg)
	data := sink.Rewritten(t, tg, columns)
	staged := stagedAs(d, t, assigned)
	stale, changed := "1 = 0", "1 = 0" // no data columns: an existing row is left as it is
	if len(data) > 0 {
		incoming := make([]string, len(data))
		for i, n := range data {
			incoming[i] = exactOf(d, t, n, staged(n))
		}
		changed = d.Distinct(exact(d, t, data, "t."), incoming)
		if tg.Version != "" {
			stored, v := "t."+d.Quote(tg.Version), staged(tg.Version)
			stale = stored + " IS NOT NULL AND (" + v + " IS NULL OR " + v + " < " + stored + ")"
		}
	}
	present := "t." + d.Quote(conflict[0]) + " IS NOT NULL"
	match := stagedKeyMatch(d, t, conflict, assigned)
	rows, err := tx.QueryContext(ctx, `SELECT `+group+`, count(*),
		coalesce(sum(CASE WHEN `+present+` THEN 0 ELSE 1 END), 0),
		coalesce(sum(CASE WHEN `+present+` AND (`+stale+`) THEN 1 ELSE 0 END), 0),
		coalesce(sum(CASE WHEN `+present+` AND NOT (`+stale+`) AND (`+changed+`) THEN 1 ELSE 0 END), 0)
		FROM `+d.QuoteTable(stage)+` s LEFT JOIN `+d.QuoteTable(tg.Table)+` t ON `+match+` GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("classify staged rows of %s: %w", tg.Table, err)
	}
	defer rows.Close()
	out := map[int64]idemtype.Rows{}
	for rows.Next() {
		var g int64
		var c idemtype.Rows
		if err := rows.Scan(&g, &c.Read, &c.Inserted, &c.Stale, &c.Updated); err != nil {
			return nil, fmt.Errorf("classify staged rows of %s: %w", tg.Table, err)
		}
		c.Unchanged = c.Read - c.Inserted - c.Stale - c.Updated
		out[g] = c
	}
	return out, rows.Err()
}

// stagedAs returns the expression of a staged value (alias s) of a
// column of t as Classify compares it: with assigned, cast to the
// column's SQL type (the value the column holds of it).
func stagedAs(d sink.Driver, t *sink.Table, assigned bool) func(string) string {
	if !assigned {
		return func(name string) string { return "s." + d.Quote(name) }
	}
	types := map[string]string{}
	for _, c := range t.Columns {
		types[c.Name] = c.SQLType
	}
	return func(name string) string {
		if types[name] == "" {
			return "s." + d.Quote(name)
		}
		return "CAST(s." + d.Quote(name) + " AS " + types[name] + ")"
	}
}

// stagedKeyMatch is the condition that a stored row (alias t) holds the
// key of a staged one (alias s) as the move's ON CONFLICT matches it: the
// staged key as the table's column holds it (a timestamp(0) key's
// rounded second), cast as stagedAs casts it or by the driver's
// KeyAssigner.
func stagedKeyMatch(d sink.Driver, t *sink.Table, conflict []string, assigned bool) string {
	staged := stagedAs(d, t, assigned)
	if a, ok := d.(KeyAssigner); ok && !assigned {
		staged = func(name string) string { return a.AssignedKey("s."+d.Quote(name), t.Column(name)) }
	}
	keys := make([]string, len(conflict))
	for i, k := range conflict {
		keys[i] = d.KeyValue("t."+d.Quote(k), t.Kind(k)) + " = " + d.KeyValue(staged(k), t.Kind(k))
	}
	return strings.Join(keys, " AND ")
}

// SeenHas is the condition that the file had the key of a row of table t
// (alias t): that seen (quoted; alias k), a sweep's table of the keys seen
// or an --atomic import's staging table, holds it, each key column
// compared as KeyValue compares it and a file's key taken as t's column
// holds it where the column keeps fewer digits of a second than the file
// (TimeUnit: a PostgreSQL timestamp(0) rounds 00:00:00.6 to 00:00:01, a
// MariaDB DATETIME(0) truncates 00:00:01.6 to 00:00:01), by the driver's
// KeyAssigner or a cast to the column's type, and by the collation of t's
// column where the driver is a Collator (SQLite, whose comparison takes
// the left operand's: the seen table's BINARY column). Compared as the
// file wrote it, the stored key was one the file lacked, and a sweep
// removed the row the file holds. Other keys are compared as they are, so that an index
// of k's key serves. A KeyAssigner's key that must be cast is looked up
// with IN, which MariaDB materializes once, where its EXISTS would read
// every key seen for each row (a dependent subquery that no index of k
// serves); a row whose key holds a NULL has none the file had, as with
// EXISTS.
func SeenHas(d sink.Driver, t *sink.Table, key []string, seen string) string {
	match := make([]string, len(key))
	had := make([]string, len(key))
	stored := make([]string, len(key))
	present := make([]string, len(key))
	cast := false
	for i, k := range key {
		h := "k." + d.Quote(k)
		if c := t.Column(k); c != nil && c.TimeUnit > 1 {
			cast = true
			if a, ok := d.(KeyAssigner); ok {
				h = a.AssignedKey(h, c)
			} else {
				h = "CAST(" + h + " AS " + c.SQLType + ")"
			}
		}
		had[i], stored[i] = d.KeyValue(h, t.Kind(k)), d.KeyValue("t."+d.Quote(k), t.Kind(k))
		if c, ok := d.(Collator); ok {
			had[i] = c.Collate(had[i], t.Column(k))
		}
		match[i] = had[i] + " = " + stored[i]
		present[i] = "t." + d.Quote(k) + " IS NOT NULL"
	}
	if _, ok := d.(KeyAssigner); ok && cast {
		return "(" + strings.Join(present, " AND ") + " AND (" + strings.Join(stored, ", ") + ") IN (SELECT " + strings.Join(had, ", ") + " FROM " + seen + " k))"
	}
	return "EXISTS (SELECT 1 FROM " + seen + " k WHERE " + strings.Join(match, " AND ") + ")"
}

// Collator is a driver whose comparison of two columns takes the left
// one's collation (SQLite): Collate is expr, a key of the table of keys
// seen (KeyValue of it), compared by the collation of c (nil: not the
// table's), the table's key column, as its key's unique index compares
// text ('a' is 'A' to COLLATE NOCASE). SeenHas compares the seen key so,
// and EnsureSeen indexes it so, for the lookup to use the index.
type Collator interface {
	Collate(expr string, c *sink.Column) string
}

// KeyAssigner is a driver whose key column may hold less of a staged key
// than the stage does (MariaDB's DATETIME(0) truncates the stage's
// microseconds): AssignedKey is the staged key expr as column c (nil: not
// the table's) holds it, which Classify matches the stored key with, as
// the driver's Merge does.
type KeyAssigner interface {
	AssignedKey(expr string, c *sink.Column) string
}

// describeTarget describes tg's table, which must exist.
func describeTarget(ctx context.Context, q sink.Querier, d sink.Driver, tg sink.Target) (*sink.Table, error) {
	t, err := d.Describe(ctx, q, tg.Table)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("table %s does not exist", tg.Table)
	}
	return t, nil
}

// conflictColumns are the columns rows of tg are keyed by: the natural key,
// or in ordinal mode the lineage columns.
func conflictColumns(tg sink.Target) []string {
	if tg.Ordinal() {
		return []string{sink.FileColumn, sink.RowColumn}
	}
	return tg.Key
}

// exact quotes each name, prefixed, as the driver tells stored values of
// t's columns apart (Exact).
func exact(d sink.Driver, t *sink.Table, names []string, prefix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = exactOf(d, t, n, prefix+d.Quote(n))
	}
	return out
}

// ColumnExacter is a driver that tells values of a column apart by more
// than its kind says (PostgreSQL: a json column by its text, a jsonb one
// by its value, both of kind JSON): ExactColumn is Exact for column c,
// which is not nil.
type ColumnExacter interface {
	ExactColumn(expr string, c *sink.Column) string
}

// exactOf is expr, a value of t's column name, as the driver tells stored
// values of it apart (Exact, or ExactColumn where the driver has it).
func exactOf(d sink.Driver, t *sink.Table, name, expr string) string {
	if e, ok := d.(ColumnExacter); ok {
		if c := t.Column(name); c != nil {
			return e.ExactColumn(expr, c)
		}
	}
	return d.Exact(expr, t.Kind(name))
}

// prefixed quotes each name with d.Quote, prefixed (e.g. "excluded.").
func prefixed(d sink.Driver, names []string, prefix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + d.Quote(n)
	}
	return out
}

// quoteList quotes each name with d.Quote, prefixed, and joins them with
// commas.
func quoteList(d sink.Driver, names []string, prefix string) string {
	return strings.Join(prefixed(d, names, prefix), ", ")
}
