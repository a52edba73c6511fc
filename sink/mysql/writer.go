package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/batchkey"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Columns of the staging table besides the file's.
const (
	roundColumn = "_idemport_round" // the occurrence of the row's key in the batch, from 0 (natural keys)
)

// maxStatementBytes bounds the values of one INSERT, below the server's
// max_allowed_packet (a quarter of it): large enough that a statement
// costs little more than its rows, small enough that the server does not
// hold much of a batch at once.
const maxStatementBytes = 8 << 20

// writer upserts batches into a target table through a temporary staging
// table of its connection.
type writer struct {
	conn   *sql.Conn
	tg     sink.Target
	stage  string // the staging table's name, quoted
	fields []field
	keyIdx []int // schema positions of the key columns
	// direct inserts a batch straight into the target (ordinal mode, a
	// range of the file none of whose rows is stored); staged into the
	// staging table.
	direct, staged *inserter
	// When the server takes LOAD DATA LOCAL (local_infile), the rows go
	// through loadDirect and loadStaged instead, and a batch the server
	// does not take whole through the inserters (see loader).
	local                  bool
	loadDirect, loadStaged *loader
	// Natural-key mode: whether the next batch is tried straight into the
	// target. A batch that found a stored key turns it off, so that a
	// file of stored keys pays for one failed load rather than one per
	// batch; a merged batch that inserted every row turns it back on.
	tryDirect bool
	// probe, by one key column of integers or text, is a query of the
	// stored rows of two keys, given as "(first, last)" after it: a
	// batch with a stored key at either end is not tried straight into
	// the target. Its load's message holds it (storedGuard).
	probe   string
	present string // ordinal mode: ? file key, ? first and ? last ordinal
	// ordinal mode: present as a query of the rows, the file key and the
	// range given after it (" = k AND row BETWEEN a AND b"), for a load's
	// message (storedGuard).
	presentRows string
	unload      string // ordinal mode: deletes the rows present finds
	clear       string
	update      string // "" when the table has no columns to rewrite
	insert      string
	stale       string // natural keys: counts a round's stale rows
	relineage   string // sink.Target.Loose: gives a round's unchanged rows of another file's lineage the file's
	// merge applies a round of natural keys in one statement (see
	// upsert), when mergeable, read as a staged batch is applied, finds
	// the table takes it; "" when the table has no columns to rewrite.
	merge, mergeable string
	tableArgs        []any // mergeable's arguments
	rounds           batchkey.Rounds
	// The savepoint of a batch of WriteUnder: lookUp and loadNew take it
	// in their own message, every other statement of the batch is sent
	// after sp.Take.
	sp stdsql.BatchSavepoint
}

var _ sink.SavepointWriter = (*writer)(nil)

// Writer implements sink.Driver. The table must exist (Ensure creates it).
// Writer creates on conn a TEMPORARY staging table of the file's columns
// in the target's types, which Close drops; creating or dropping a
// temporary table commits nothing, so Writer may be called inside a
// transaction. Write must then be given transactions begun on conn.
func (d Driver) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	t, err := d.Describe(ctx, conn, tg.Table)
	if err != nil {
		return nil, err
	}
	return d.WriterFor(ctx, conn, tg, schema, t)
}

// WriterFor is Writer for the table as t describes it, t being what
// Describe returned for tg.Table on conn (inside the transaction that
// holds its columns, so that they are still those): it does not describe
// the table again, where Writer describes it first.
func (d Driver) WriterFor(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema, t *sink.Table) (sink.Writer, error) {
	if t == nil {
		return nil, fmt.Errorf("write %s: no such table", tg.Table)
	}
	var packet int
	var local bool
	if err := conn.QueryRowContext(ctx, `SELECT @@max_allowed_packet, @@local_infile`).Scan(&packet, &local); err != nil {
		return nil, fmt.Errorf("write %s: read max_allowed_packet: %w", tg.Table, err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	id := hex.EncodeToString(b)
	w := &writer{conn: conn, tg: tg, stage: q("idemport_stage_" + id), local: local, tryDirect: true}
	w.rounds.Loose = tg.Loose
	names, quoted, sel, err := w.pair(t, schema)
	if err != nil {
		return nil, err
	}
	table := d.QuoteTable(tg.Table)
	if err := w.createStage(ctx, table, sel, quoted, packet, id); err != nil {
		return nil, err
	}
	match, err := w.match(ctx, d, t)
	if err != nil {
		return nil, err
	}
	round := ""
	if !tg.Ordinal() {
		round = "s." + q(roundColumn) + " = ? AND "
	}
	w.insert = "INSERT INTO " + table + " (" + strings.Join(quoted, ", ") + ", " + q(sink.FileColumn) + ", " + q(sink.RowColumn) + ")" +
		" SELECT " + prefixed(quoted, "s.") + ", ?, s." + q(sink.RowColumn) + " FROM " + w.stage + " s WHERE " + round +
		"NOT EXISTS (SELECT 1 FROM " + table + " t WHERE " + match + ")"
	w.present = "SELECT EXISTS (SELECT 1 FROM " + table + " WHERE " + q(sink.FileColumn) + " = ? AND " + q(sink.RowColumn) + " BETWEEN ? AND ?)"
	w.presentRows = "SELECT 1 FROM " + table + " WHERE " + q(sink.FileColumn)
	w.unload = "DELETE FROM " + table + " WHERE " + q(sink.FileColumn) + " = ? AND " + q(sink.RowColumn) + " BETWEEN ? AND ?"
	if len(w.keyIdx) == 1 {
		if k := w.fields[w.keyIdx[0]]; k.target == idemtype.Int64 || k.target == idemtype.String {
			w.probe = "SELECT 1 FROM " + table + " WHERE " + q(k.name) + " IN "
		}
	}
	w.rewrite(d, t, names, table, match, round)
	if !tg.Ordinal() {
		w.upsert(d, t, names, table)
	}
	return w, nil
}

// pair pairs each of the file's fields with its column of t, and returns
// the fields' names, their quoted names, and the quoted names prefixed
// by t.; it finds the key columns' positions in schema.
func (w *writer) pair(t *sink.Table, schema *arrow.Schema) (names, quoted, sel []string, err error) {
	for _, f := range schema.Fields() {
		c := t.Column(f.Name)
		if c == nil {
			return nil, nil, nil, fmt.Errorf("write %s: it has no column %q", w.tg.Table, f.Name)
		}
		w.fields = append(w.fields, field{name: f.Name, file: idemtype.TypeOf(f), target: c.Kind})
		names = append(names, f.Name)
		quoted = append(quoted, q(f.Name))
		sel = append(sel, "t."+q(f.Name))
	}
	for _, k := range w.tg.Key {
		w.keyIdx = append(w.keyIdx, schema.FieldIndices(k)[0])
	}
	return names, quoted, sel, nil
}

// createStage creates the staging table on w's connection, and the
// statements that clear it and the inserters and loaders that fill it and
// the target.
func (w *writer) createStage(ctx context.Context, table string, sel, quoted []string, packet int, id string) error {
	// The staging table: the round, the row ordinal, and the file's
	// columns in the target's types (NOT NULL and collations too), so that
	// a value the target cannot hold fails as it is staged. InnoDB, so
	// that its rows are the transaction's, undone by its rollback.
	ddl := "CREATE TEMPORARY TABLE " + w.stage + " (" + q(roundColumn) + " INT, " + q(sink.RowColumn) +
		" BIGINT) ENGINE = InnoDB SELECT " + strings.Join(sel, ", ") + " FROM " + table + " t WHERE 1 = 0"
	if _, err := w.conn.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("create staging table for %s: %w", w.tg.Table, err)
	}
	w.clear = "DELETE FROM " + w.stage
	budget := min(packet/4, maxStatementBytes)
	w.staged = newInserter(w.stage, append([]string{q(roundColumn), q(sink.RowColumn)}, quoted...), budget)
	w.direct = newInserter(table, append([]string{q(sink.FileColumn), q(sink.RowColumn)}, quoted...), budget)
	w.loadStaged = newLoader(w.stage, append([]string{q(roundColumn), q(sink.RowColumn)}, quoted...), "idemport_stage_"+id)
	w.loadDirect = newLoader(table, append([]string{q(sink.RowColumn)}, quoted...), "idemport_load_"+id)
	return nil
}

// match returns the condition under which a stored row t matches a
// staged row s.
func (w *writer) match(ctx context.Context, d Driver, t *sink.Table) (string, error) {
	// A stored row matches a staged one by the key: in ordinal mode the
	// file key (the statement's first argument) and the ordinal; by
	// natural key the key columns, as KeyValue compares them. A decimal
	// key column Ensure made is matched through the stored column of its
	// number, which is what its key indexes: MariaDB finds no index for
	// the expression KeyValue spells.
	match := "t." + q(sink.FileColumn) + " = ? AND t." + q(sink.RowColumn) + " = s." + q(sink.RowColumn)
	if !w.tg.Ordinal() {
		numbers, err := numberColumns(ctx, w.conn, w.tg.Table)
		if err != nil {
			return "", err
		}
		var m []string
		for _, k := range w.tg.Key {
			stored := d.KeyValue("t."+q(k), t.Kind(k))
			if n, ok := numbers[k]; ok && t.Kind(k) == idemtype.Decimal {
				stored = "t." + q(n)
			}
			m = append(m, stored+" = "+d.KeyValue("s."+q(k), t.Kind(k)))
		}
		match = strings.Join(m, " AND ")
	}
	return match, nil
}

// rewrite sets w's statements that rewrite changed rows and, by natural
// key, count stale ones.
func (w *writer) rewrite(d Driver, t *sink.Table, names []string, table, match, round string) {
	// A changed row is written whole (sink.Rewritten), when it differs
	// from the stored row as Exact tells values apart and, by natural
	// key, is not older (staleSQL); its lineage then becomes the row's.
	data := sink.Rewritten(t, w.tg, names)
	if len(data) > 0 {
		var set, stored, incoming []string
		for _, c := range data {
			set = append(set, "t."+q(c)+" = s."+q(c))
			stored, incoming = append(stored, d.Exact("t."+q(c), t.Kind(c))), append(incoming, d.Exact("s."+q(c), t.Kind(c)))
		}
		where := d.Distinct(stored, incoming)
		if !w.tg.Ordinal() {
			set = append(set, "t."+q(sink.FileColumn)+" = ?", "t."+q(sink.RowColumn)+" = s."+q(sink.RowColumn))
			where = round + "NOT " + staleSQL(w.tg.Version) + " AND " + where
		}
		w.update = "UPDATE " + table + " t JOIN " + w.stage + " s ON " + match + " SET " + strings.Join(set, ", ") + " WHERE " + where
	}
	if !w.tg.Ordinal() {
		w.stale = "SELECT count(*) FROM " + w.stage + " s JOIN " + table + " t ON " + match + " WHERE " + round + staleSQL(w.tg.Version)
	}
	if w.tg.Loose {
		// The file holds keys the table may compare as one (sink.Target):
		// a row the update left, not older, stored by another file (so
		// unchanged) takes the file's lineage, still counted unchanged.
		w.relineage = "UPDATE " + table + " t JOIN " + w.stage + " s ON " + match + " SET t." + q(sink.FileColumn) + " = ?, t." + q(sink.RowColumn) + " = s." + q(sink.RowColumn) +
			" WHERE " + round + "NOT " + staleSQL(w.tg.Version) + " AND NOT coalesce(t." + q(sink.FileColumn) + " = ?, false)"
	}
}

// numberColumns returns, for each decimal column of table that a stored
// column of its number keys (markKey), that column's name.
func numberColumns(ctx context.Context, qr sink.Querier, table string) (map[string]string, error) {
	db, name := splitName(table)
	rows, err := qr.QueryContext(ctx, `SELECT column_name, column_comment FROM information_schema.columns
		WHERE table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(table_name AS BINARY) = CAST(? AS BINARY)
		AND column_comment LIKE ? AND extra LIKE '%GENERATED%'`, db, name, markKey+"%")
	if err != nil {
		return nil, fmt.Errorf("find the number columns of %s: %w", table, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var col, comment string
		if err := rows.Scan(&col, &comment); err != nil {
			return nil, fmt.Errorf("find the number columns of %s: %w", table, err)
		}
		out[strings.TrimPrefix(comment, markKey)] = col
	}
	return out, rows.Err()
}

// staleSQL is the condition under which the staged row s is older than
// the stored row t: the stored version is newer (NULL is older than any),
// or, with equal versions or no version column, a later row of the same
// file (the statement's argument) was already applied. It is never NULL
// (stored rows with NULL lineage are never newer by position), so that
// the count and the update agree.
func staleSQL(version string) string {
	return olderSQL(version, func(c string) string { return "t." + q(c) }, func(c string) string { return "s." + q(c) }, "?")
}

// olderSQL is staleSQL of the stored row's columns stored(name), the
// incoming row's incoming(name), and the file key fileKey.
func olderSQL(version string, stored, incoming func(string) string, fileKey string) string {
	cond := "coalesce(" + stored(sink.FileColumn) + " = " + fileKey + " AND " + stored(sink.RowColumn) + " > " + incoming(sink.RowColumn) + ", false)"
	if version == "" {
		return cond
	}
	sv, v := stored(version), incoming(version)
	return "((" + sv + " IS NOT NULL AND (" + v + " IS NULL OR " + v + " < " + sv + ")) OR ((" + v + " <=> " + sv + ") AND " + cond + "))"
}

// The session variables of the merge (upsert): of the stored row met,
// whether the incoming row is older and whether it is written; and over
// the statement, the stored rows met, the older and the written.
const (
	varOlder   = "@idemport_older"
	varApply   = "@idemport_apply"
	varFound   = "@idemport_found"
	varStale   = "@idemport_stale"
	varApplied = "@idemport_applied"
	varMark    = "@idemport_mark" // sink.Target.Loose: the stored row takes the lineage
)

// upsert sets w's statement that applies a round of natural keys in one
// pass over the stage, INSERT … SELECT … ON DUPLICATE KEY UPDATE, and the
// query that tells whether the table takes it. A new key is inserted, and
// a stored row met is written, lineage too, when the incoming row
// differs and is not older (as by rewrite's UPDATE). MariaDB assigns the
// columns left to right, and an assignment reads the columns earlier ones
// set: a guard in each would, once the first changed columns are set,
// find the row no longer differs (and the version, once set, equal),
// and leave the rest, lineage and all, as they were. So the first
// assignment decides, reading the stored row before any column changes,
// into a session variable that the others read, and the lineage
// assignments count: the rows met, the older, the written. The counts
// are the statement's own decisions, whatever another transaction
// committed meanwhile: a key stored after the stage was filled is met,
// not inserted.
func (w *writer) upsert(d Driver, t *sink.Table, names []string, table string) {
	data := sink.Rewritten(t, w.tg, names)
	if len(data) == 0 {
		return
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = q(n)
	}
	// The stored row's columns by the table's name (the insert names no
	// alias), the incoming row's by VALUES().
	stored := func(c string) string { return table + "." + q(c) }
	incoming := func(c string) string { return "VALUES(" + q(c) + ")" }
	st, in := make([]string, len(data)), make([]string, len(data))
	for i, c := range data {
		st[i], in[i] = d.Exact(stored(c), t.Kind(c)), d.Exact(incoming(c), t.Kind(c))
	}
	decide := "(" + varApply + " := IF((" + varOlder + " := " + olderSQL(w.tg.Version, stored, incoming, incoming(sink.FileColumn)) +
		"), FALSE, " + d.Distinct(st, in) + "))"
	set := make([]string, 0, len(data)+2)
	for i, c := range data {
		cond := varApply
		if i == 0 {
			cond = decide
		}
		set = append(set, q(c)+" = IF("+cond+", "+incoming(c)+", "+stored(c)+")")
	}
	lineage := func(c string) string { return "IF(" + varApply + ", " + incoming(c) + ", " + stored(c) + ")" }
	file := lineage(sink.FileColumn)
	if w.tg.Loose {
		// The file holds keys the table may compare as one (sink.Target):
		// an unchanged row stored by another file takes the file's
		// lineage too, decided as the file column is assigned (the row
		// column, after it, would find the file column already set).
		mark := "(" + varMark + " := " + varApply + " OR NOT " + varOlder + " AND NOT coalesce(" + stored(sink.FileColumn) + " = " + incoming(sink.FileColumn) + ", false))"
		file = "IF(" + mark + ", " + incoming(sink.FileColumn) + ", " + stored(sink.FileColumn) + ")"
		lineage = func(c string) string { return "IF(" + varMark + ", " + incoming(c) + ", " + stored(c) + ")" }
	}
	set = append(set,
		q(sink.FileColumn)+" = "+after(varStale+" := "+varStale+" + "+varOlder, file),
		q(sink.RowColumn)+" = "+after(varFound+" := "+varFound+" + 1", after(varApplied+" := "+varApplied+" + "+varApply, lineage(sink.RowColumn))))
	w.merge = "INSERT INTO " + table + " (" + strings.Join(quoted, ", ") + ", " + q(sink.FileColumn) + ", " + q(sink.RowColumn) + ")" +
		" SELECT " + strings.Join(quoted, ", ") + ", ?, " + q(sink.RowColumn) + " FROM " + w.stage + " WHERE " + q(roundColumn) + " = ?" +
		" ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
	// ON DUPLICATE KEY UPDATE is the two statements' equal only where
	// the key is the table's one unique key: another would make a row
	// the key does not match a duplicate (the two statements' insert
	// fails on it: TestWriterRowErrors). And a trigger would see every
	// stored row met updated, unchanged or older ones too.
	db, name := splitName(w.tg.Table)
	w.tableArgs = []any{db, name, db, name}
	where := func(schema, table string) string {
		return " WHERE " + schema + " = coalesce(nullif(?, ''), DATABASE()) AND CAST(" + table + " AS BINARY) = CAST(? AS BINARY)"
	}
	w.mergeable = "SELECT (SELECT count(DISTINCT index_name) FROM information_schema.statistics" + where("table_schema", "table_name") + " AND non_unique = 0) = 1" +
		" AND NOT EXISTS (SELECT 1 FROM information_schema.triggers" + where("event_object_schema", "event_object_table") + ")"
}

// after is value, evaluated after effect: IF evaluates its condition
// first, and then one of its branches, here the same.
func after(effect, value string) string {
	return "IF((" + effect + ") IS NULL, " + value + ", " + value + ")"
}

// prefixed joins names, each prefixed.
func prefixed(names []string, prefix string) string {
	return prefix + strings.Join(names, ", "+prefix)
}

// Write implements sink.Writer. Every statement runs in tx, so a Write into
// a transaction that is over, or under a cancelled ctx, fails at its first
// and writes nothing. A failure caused by the rows' values is a
// *sink.RowError; InnoDB undoes the failed statement, and the rows the
// Write staged or wrote before it stay in tx until the caller rolls back
// (to a savepoint).
func (w *writer) Write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	c, err := w.write(ctx, tx, fileKey, rec, ordinals)
	return c, rowError(err)
}

// WriteUnder implements sink.SavepointWriter. The savepoint is taken in
// the message of the batch's first statement (the load straight into the
// target, whose message looks up the batch's first and last keys or its
// ordinals first, or that look-up alone without LOAD DATA LOCAL), and a
// load straight into the target that must be undone is rolled back to it
// rather than to a savepoint of its own. It is left taken when the batch
// is written, as sink.SavepointWriter allows: MariaDB's next SAVEPOINT of
// the name replaces it, and COMMIT releases it. A batch of keys loaded
// straight into the target then costs one round trip where six were (the
// savepoint, the look-up, the load's savepoint, the load, its warnings,
// the release).
func (w *writer) WriteUnder(ctx context.Context, tx *sql.Tx, name string, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	w.sp.Begin(name)
	defer w.sp.End()
	c, err := w.write(ctx, tx, fileKey, rec, ordinals)
	return c, rowError(err)
}

// lookUp runs query, whose one row is one boolean, with args in tx, the
// savepoint of WriteUnder that no statement has taken yet taken in the
// same message.
func (w *writer) lookUp(ctx context.Context, tx *sql.Tx, query string, args ...any) (bool, error) {
	var found bool
	err := tx.QueryRowContext(ctx, w.sp.Prefix()+query, args...).Scan(&found)
	return found, err
}

func (w *writer) write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	var total idemtype.Rows
	n := int(rec.NumRows())
	if n == 0 {
		return total, nil
	}
	total.Read = int64(n)
	span := sink.RowSpan(ordinals)
	cols := rec.Columns()
	values := func(r int, args []any) []any {
		for c := range w.fields {
			args = append(args, w.fields[c].value(cols[c], r))
		}
		return args
	}
	appenders := make([]func([]byte, int) []byte, len(w.fields))
	for c := range w.fields {
		appenders[c] = w.fields[c].loadAppender(cols[c])
	}
	line := func(r int, b []byte) []byte {
		for _, app := range appenders {
			b = append(b, '\t')
			b = app(b, r)
		}
		return append(b, '\n')
	}
	done, err := w.tryNew(ctx, tx, fileKey, n, ordinals, span, cols, line, values)
	if err != nil {
		return total, err
	}
	if done {
		total.Inserted = int64(n)
		return total, nil
	}
	// The statements below do not take the savepoint of WriteUnder in
	// their messages: it is taken here.
	if err := w.sp.Take(ctx, tx); err != nil {
		return total, err
	}
	rounds := w.number(n, cols)
	if err := w.stageBatch(ctx, tx, n, ordinals, span, line, values); err != nil {
		return total, err
	}
	if w.tg.Ordinal() {
		err := w.applyOrdinal(ctx, tx, fileKey, n, span, &total)
		return total, err
	}
	err = w.applyRounds(ctx, tx, fileKey, n, rounds, span, &total)
	return total, err
}

// tryNew writes a batch straight into the target when it can, and reports
// whether it did (every row inserted).
func (w *writer) tryNew(ctx context.Context, tx *sql.Tx, fileKey int64, n int, ordinals []int64, span string, cols []arrow.Array, line func(int, []byte) []byte, values func(int, []any) []any) (bool, error) {
	if w.tg.Ordinal() {
		// The first load of a range of the file: none of its rows is
		// stored (the partition's claim keeps other attempts out of the
		// range), so they are inserted as they are. The load's message
		// looks first, and stops before the load when one is.
		var present, ok bool
		var err error
		if w.local {
			guard := storedGuard(w.presentRows + " = " + strconv.FormatInt(fileKey, 10) + " AND " + q(sink.RowColumn) +
				" BETWEEN " + strconv.FormatInt(ordinals[0], 10) + " AND " + strconv.FormatInt(ordinals[n-1], 10))
			if ok, present, err = w.loadNew(ctx, tx, fileKey, n, ordinals, line, guard); err != nil {
				return false, fmt.Errorf("load %s into %s: %w", span, w.tg.Table, err)
			}
		} else if present, err = w.lookUp(ctx, tx, w.present, fileKey, ordinals[0], ordinals[n-1]); err != nil {
			return false, fmt.Errorf("look for %s in %s: %w", span, w.tg.Table, err)
		}
		if !present {
			if !ok {
				if err := w.sp.Take(ctx, tx); err != nil {
					return false, err
				}
				_, err = w.direct.insert(ctx, tx, n, func(r int, args []any) []any {
					return values(r, append(args, fileKey, ordinals[r]))
				})
				if err != nil {
					return false, fmt.Errorf("insert %s into %s: %w", span, w.tg.Table, err)
				}
			}
			return true, nil
		}
	} else if w.tryDirect {
		// A batch whose first or last key is stored (a delta's changed
		// rows) would be loaded only to be undone: the server looks up
		// every key of it, and stores the new ones only to roll them
		// back (the first batch of bench/gen's 100,000-row delta into
		// its 1M rows: a load of 3.2 s, in an import of 18.7 s on a
		// loaded machine). Two index probes tell first, in the load's
		// message, before it: a round trip of their own cost each batch
		// of a first import 6 ms on average on a loaded machine (32
		// batches of bench/gen's 1M rows). Without LOAD DATA LOCAL the
		// batch is staged whatever they find.
		guard := ""
		if w.probe != "" {
			k := w.keyIdx[0]
			guard = storedGuard(w.probe + "(" + keyLiteral(w.fields[k].value(cols[k], 0)) + ", " + keyLiteral(w.fields[k].value(cols[k], n-1)) + ")")
		}
		// A batch of distinct keys none of which is stored is loaded
		// straight into the target. The key's unique index finds a stored
		// key, and a key the batch repeats, as batchkey would (see
		// loadNew): a NULL key, the one value it lets repeat, is a bad
		// row of the plan. So the batch is numbered by its keys only when
		// it takes the other path.
		ok, _, err := w.loadNew(ctx, tx, fileKey, n, ordinals, line, guard)
		if err != nil {
			return false, fmt.Errorf("load %s into %s: %w", span, w.tg.Table, err)
		}
		if ok {
			return true, nil
		}
		w.tryDirect = false
	}
	return false, nil
}

// number numbers the batch's rows by their keys' occurrences (natural
// keys) and returns how many rounds they take: 1 in ordinal mode.
func (w *writer) number(n int, cols []arrow.Array) int32 {
	rounds := int32(1)
	if !w.tg.Ordinal() {
		rounds = w.rounds.Number(n, func(buf []byte, i int) []byte {
			for _, k := range w.keyIdx {
				buf = w.fields[k].key(buf, cols[k], i)
			}
			return buf
		})
	}
	return rounds
}

// stageBatch replaces the staging table's rows with the batch's, loaded
// when the server takes LOAD DATA LOCAL and inserted otherwise.
func (w *writer) stageBatch(ctx context.Context, tx *sql.Tx, n int, ordinals []int64, span string, line func(int, []byte) []byte, values func(int, []any) []any) error {
	if _, err := tx.ExecContext(ctx, w.clear); err != nil {
		return fmt.Errorf("clear the staging table of %s: %w", w.tg.Table, err)
	}
	staged := false
	if w.local {
		ok, err := w.loadStaged.load(ctx, tx, n, func(r int, b []byte) []byte {
			round := int32(0)
			if !w.tg.Ordinal() {
				round = w.rounds.Of[r]
			}
			b = strconv.AppendInt(b, int64(round), 10)
			b = append(b, '\t')
			b = strconv.AppendInt(b, ordinals[r], 10)
			return line(r, b)
		}, "", "")
		switch {
		case loadRefused(err):
			w.local = false
		case err != nil:
			return fmt.Errorf("stage %s for %s: %w", span, w.tg.Table, err)
		case !ok:
			// Some rows were cut, clamped or skipped: stage the batch
			// again with INSERTs, which fail where the load warned.
			if _, err := tx.ExecContext(ctx, w.clear); err != nil {
				return fmt.Errorf("clear the staging table of %s: %w", w.tg.Table, err)
			}
		default:
			staged = true
		}
	}
	if !staged {
		_, err := w.staged.insert(ctx, tx, n, func(r int, args []any) []any {
			round := int32(0)
			if !w.tg.Ordinal() {
				round = w.rounds.Of[r]
			}
			return values(r, append(args, round, ordinals[r]))
		})
		if err != nil {
			return fmt.Errorf("stage %s for %s: %w", span, w.tg.Table, err)
		}
	}
	return nil
}

// applyOrdinal applies the staged batch of a range of the file some of
// whose rows are stored, counting into total.
func (w *writer) applyOrdinal(ctx context.Context, tx *sql.Tx, fileKey int64, n int, span string, total *idemtype.Rows) error {
	upd, err := changed(ctx, tx, w.update, fileKey)
	if err != nil {
		return fmt.Errorf("update %s of %s: %w", span, w.tg.Table, err)
	}
	var ins int64
	if upd < int64(n) { // else every row was stored: none to insert (see applyRounds)
		if ins, err = changed(ctx, tx, w.insert, fileKey, fileKey); err != nil {
			return fmt.Errorf("insert %s into %s: %w", span, w.tg.Table, err)
		}
	}
	total.Inserted, total.Updated, total.Unchanged = ins, upd, int64(n)-ins-upd
	return nil
}

// applyRounds applies the staged batch of natural keys, a round at a time,
// counting into total: each round in one statement (mergeRound) when the
// table takes it (mergeable), else by an UPDATE of the stored keys and an
// INSERT of the others.
func (w *writer) applyRounds(ctx context.Context, tx *sql.Tx, fileKey int64, n int, rounds int32, span string, total *idemtype.Rows) error {
	// Rows of one key are applied in file order, a round at a time: the
	// first occurrence of each key, then the second, …
	per := make([]int64, rounds)
	for _, r := range w.rounds.Of {
		per[r]++
	}
	merge := false
	if w.merge != "" {
		if err := tx.QueryRowContext(ctx, w.mergeable, w.tableArgs...).Scan(&merge); err != nil {
			return fmt.Errorf("look up the unique keys and triggers of %s: %w", w.tg.Table, err)
		}
	}
	for r := range rounds {
		if merge {
			c, err := w.mergeRound(ctx, tx, fileKey, r, per[r], span)
			if err != nil {
				return err
			}
			total.Add(c)
			continue
		}
		upd, err := changed(ctx, tx, w.update, fileKey, r, fileKey)
		if err != nil {
			return fmt.Errorf("update %s of %s: %w", span, w.tg.Table, err)
		}
		// A round whose every row the update found (the session counts
		// found rows, and a round's keys are distinct) has no key left to
		// insert: the insert would look each of them up again, and the
		// pages of a delta's changed rows, spread over a table larger than
		// the buffer pool, were read from disk twice.
		var ins int64
		if upd < per[r] {
			if ins, err = changed(ctx, tx, w.insert, fileKey, r); err != nil {
				return fmt.Errorf("insert %s into %s: %w", span, w.tg.Table, err)
			}
		}
		// The rows neither inserted nor updated are stale or unchanged,
		// told apart by a join only when there are any. The update left
		// them as they were, and reading them now judges them as it did;
		// a row it inserted or updated is never stale against itself. A
		// row another transaction changed since (the update locks only
		// the rows it changes) may count as either; the count stays
		// within the rows left.
		var stale int64
		rest := per[r] - ins - upd
		if rest > 0 {
			// A key another transaction stored and committed after the
			// update looked for it (READ COMMITTED: each statement reads
			// what is committed when it starts) is one the insert finds
			// and skips: neither statement wrote it. The update again
			// reads it (as it locks, the latest committed row) and
			// writes it when it is not older.
			again, err := changed(ctx, tx, w.update, fileKey, r, fileKey)
			if err != nil {
				return fmt.Errorf("update %s of %s: %w", span, w.tg.Table, err)
			}
			upd += again
			rest -= again
		}
		if rest > 0 && w.relineage != "" {
			if _, err := tx.ExecContext(ctx, w.relineage, fileKey, r, fileKey, fileKey); err != nil {
				return fmt.Errorf("record the lineage of %s of %s: %w", span, w.tg.Table, err)
			}
		}
		if rest > 0 {
			if err := tx.QueryRowContext(ctx, w.stale, r, fileKey).Scan(&stale); err != nil {
				return fmt.Errorf("count stale rows of %s (%s): %w", w.tg.Table, span, err)
			}
		}
		stale = min(stale, rest)
		total.Inserted += ins
		total.Updated += upd
		total.Stale += stale
		total.Unchanged += rest - stale
	}
	w.tryDirect = total.Inserted == int64(n)
	return nil
}

// mergeRound applies round r of the staged batch, n rows of distinct keys,
// by w.merge, and counts them: the rows it met stored were written,
// older (stale) or unchanged, the others inserted.
func (w *writer) mergeRound(ctx context.Context, tx *sql.Tx, fileKey int64, r int32, n int64, span string) (idemtype.Rows, error) {
	var c idemtype.Rows
	if _, err := tx.ExecContext(ctx, "SET "+varFound+" = 0, "+varStale+" = 0, "+varApplied+" = 0"); err != nil {
		return c, fmt.Errorf("merge %s into %s: %w", span, w.tg.Table, err)
	}
	if _, err := tx.ExecContext(ctx, w.merge, fileKey, r); err != nil {
		return c, fmt.Errorf("merge %s into %s: %w", span, w.tg.Table, err)
	}
	var found, stale, applied int64
	if err := tx.QueryRowContext(ctx, "SELECT "+varFound+", "+varStale+", "+varApplied).Scan(&found, &stale, &applied); err != nil {
		return c, fmt.Errorf("count the rows merged of %s into %s: %w", span, w.tg.Table, err)
	}
	if found < 0 || found > n || stale < 0 || applied < 0 || stale+applied > found {
		return c, fmt.Errorf("merge %s into %s: of %d rows, %d met stored, %d of them older and %d written", span, w.tg.Table, n, found, stale, applied)
	}
	c.Inserted, c.Updated, c.Stale, c.Unchanged = n-found, applied, stale, found-stale-applied
	return c, nil
}

// loadSavepoint names the savepoint a batch of natural keys is loaded
// straight into the target under. It nests inside any savepoint of the
// caller; a later batch's sets it anew, so a load that counts leaves it
// set, saving a round trip.
const loadSavepoint = "idemport_load"

// loadNew loads the rows of a batch (their lines appended by line) straight
// into the target with LOAD DATA LOCAL, and reports whether the server
// took every one of them unchanged. When it did not, what the load wrote
// is undone, and the batch must take another path: in ordinal mode a value
// the server cut or clamped (the INSERTs then fail on it); by natural key
// also a stored key, or a key repeated in the batch, which the key's
// unique index skips (every natural-key target has one: see sink.Check). It reports false, having written
// nothing, when the server takes no LOAD DATA LOCAL, and stops trying.
//
// In ordinal mode none of the batch's rows was stored (write looked), so
// deleting the batch's range of ordinals undoes the load; by natural key
// the load runs under a savepoint, rolled back to: the batch's own under
// WriteUnder (the load is its first write), else loadSavepoint. Either is
// taken in the load's message.
//
// guard, unless "", is a storedGuard sent in the same message after the
// savepoint of WriteUnder and before the load's: when it finds a row, the
// message stops there, nothing is loaded and loadNew reports stored.
func (w *writer) loadNew(ctx context.Context, tx *sql.Tx, fileKey int64, n int, ordinals []int64, line func(int, []byte) []byte, guard string) (ok, stored bool, err error) {
	if !w.local {
		return false, false, nil
	}
	back, first := loadSavepoint, w.sp.Prefix()+guard
	switch {
	case w.tg.Ordinal():
	case w.sp.Under != "":
		back = w.sp.Under
	default:
		first += "SAVEPOINT " + loadSavepoint + "; "
	}
	ok, err = w.loadDirect.load(ctx, tx, n, func(r int, b []byte) []byte {
		return line(r, strconv.AppendInt(b, ordinals[r], 10))
	}, q(sink.FileColumn)+" = "+strconv.FormatInt(fileKey, 10), first)
	switch {
	case guard != "" && guardFound(err):
		return false, true, nil
	case loadRefused(err):
		w.local = false
		return false, false, nil
	case err != nil || ok:
		return ok, false, err
	}
	if w.tg.Ordinal() {
		if _, err := tx.ExecContext(ctx, w.unload, fileKey, ordinals[0], ordinals[n-1]); err != nil {
			return false, false, fmt.Errorf("undo the load: %w", err)
		}
		return false, false, nil
	}
	undo := "ROLLBACK TO SAVEPOINT " + back
	if back == loadSavepoint {
		undo += "; RELEASE SAVEPOINT " + back
	}
	if _, err := tx.ExecContext(ctx, undo); err != nil {
		return false, false, fmt.Errorf("roll back to savepoint: %w", err)
	}
	return false, false, nil
}

// storedGuard is a statement, ended by "; ", that fails when the query
// rows finds a row and does nothing otherwise: a scalar subquery of two
// rows then, which the server refuses (ER_SUBQUERY_NO_1_ROW, guardFound).
// In a message of statements the server stops at it, so that what
// follows it runs only when rows finds none, with no round trip of its
// own to look first. It is a SELECT … INTO, which returns no rows and
// reads as a SELECT does, without locking: a SET of the same subquery
// waits for the row lock of a key another transaction is storing
// (TestWriterMergeMeetsAKeyCommittedMeanwhile then never merges).
func storedGuard(rows string) string {
	return "SELECT (SELECT 1 FROM (SELECT 1 UNION ALL SELECT 2) two WHERE EXISTS (" + rows + ")) INTO @idemport_stored; "
}

// keyLiteral is v, a key's value as field.value gives it for a column of
// integers or text, as a literal of this driver's sessions.
func keyLiteral(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return literal(v)
	}
	return literal(fmt.Sprint(v))
}

// Close implements sink.Writer: it drops the staging table, which commits
// nothing.
func (w *writer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.conn.ExecContext(ctx, "DROP TEMPORARY TABLE IF EXISTS "+w.stage); err != nil {
		return fmt.Errorf("drop staging table of %s: %w", w.tg.Table, err)
	}
	return nil
}
