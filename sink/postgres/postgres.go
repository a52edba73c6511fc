package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/batchkey"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// sqlType is the column type for a kind.
func sqlType(kind idemtype.Type) string {
	switch kind {
	case idemtype.Bool:
		return "boolean"
	case idemtype.Int64:
		return "bigint"
	case idemtype.Float64:
		return "double precision"
	case idemtype.Timestamp:
		return "timestamptz"
	case idemtype.LocalTimestamp:
		return "timestamp"
	case idemtype.Date:
		return "date"
	case idemtype.JSON:
		return "jsonb"
	case idemtype.Decimal:
		return "numeric"
	}
	return "text"
}

// kindOf maps a built-in type, by its name in pg_catalog, to a kind. Other
// types, domains included, map to none.
func kindOf(typname string) idemtype.Type {
	switch typname {
	case "int2", "int4", "int8":
		return idemtype.Int64
	case "float4", "float8":
		return idemtype.Float64
	case "numeric":
		return idemtype.Decimal
	case "bool":
		return idemtype.Bool
	case "timestamptz":
		return idemtype.Timestamp
	case "timestamp":
		return idemtype.LocalTimestamp
	case "date":
		return idemtype.Date
	case "text", "varchar", "bpchar":
		return idemtype.String
	case "json", "jsonb":
		return idemtype.JSON
	}
	return idemtype.Unknown
}

// limits sets what column c, of built-in type typname with modifier
// typmod (-1: none), holds beyond its kind.
func limits(c *sink.Column, typname string, typmod int) {
	const varhdrsz = 4 // typmods of varchar, bpchar and numeric count it
	switch typname {
	case "int2":
		c.IntBits = 16
	case "int4":
		c.IntBits = 32
	case "varchar", "bpchar":
		if typmod > varhdrsz {
			c.MaxChars = typmod - varhdrsz
		}
	case "numeric":
		c.Numeric = true
		if typmod > varhdrsz {
			m := typmod - varhdrsz
			c.Precision = (m >> 16) & 0xffff
			c.Scale = ((m & 0x7ff) ^ 1024) - 1024 // an 11-bit signed scale
		}
	case "jsonb":
		c.JSONB = true
	case "timestamp", "timestamptz":
		if typmod >= 0 && typmod < 6 { // timestamp(p): p digits of a second
			c.TimeUnit = 1
			for range 6 - typmod {
				c.TimeUnit *= 10
			}
		}
	}
}

// describe reads the columns and keys of the table named name (resolved
// through the search path when unqualified), or returns nil when there is
// no such table; for a schema-qualified name, that fails with
// sink.ErrNoSchema when the schema does not exist either.
func describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, error) {
	if _, _, err := splitTable(name); err != nil {
		return nil, err
	}
	rows, err := qr.QueryContext(ctx, describeSQL("$1", "$2::text"), quoteTable(name), schemaOf(name))
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	defer rows.Close()
	t, err := readDescribed(name, rows.Next, rows.Scan)
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	return described(name, t)
}

// schemaOf is the quoted schema of a schema-qualified table name, the
// second argument of describeSQL, or "" for an unqualified one.
func schemaOf(name string) string {
	if schema, _, _ := splitTable(name); schema != "" {
		return q(schema)
	}
	return ""
}

// describeSQL is the query of describe, rel being the SQL text (a
// parameter or a literal) of the table's quoted name and nsp that of its
// quoted schema (schemaOf). One query, one round trip, reads all: the
// columns (part 0, in their order), then the keys' columns (part 1), then
// whether the schema of a qualified name exists (part 2, its one row's
// notnull), which tells a missing table from a missing schema without
// another round trip, then a row for a partitioned table (part 3). Keys are the indexes ON CONFLICT can use as
// arbiters: unique, valid, not deferrable, not partial, and on plain
// columns (INCLUDE columns are not part of the key), the primary key
// first, each key's columns in its order.
func describeSQL(rel, nsp string) string {
	return `SELECT 0 AS part, a.attnum::bigint AS n, a.attname, format_type(a.atttypid, a.atttypmod),
		CASE WHEN t.typnamespace = 'pg_catalog'::regnamespace THEN t.typname::text ELSE '' END,
		a.attnotnull, a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '', a.atttypmod,
		false AS prim, 0::bigint AS id, 0::bigint AS ord
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = to_regclass(` + rel + `) AND a.attnum > 0 AND NOT a.attisdropped
		UNION ALL
		SELECT 1, 0, a.attname, '', '', false, false, 0, i.indisprimary, i.indexrelid::bigint, k.ord
		FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = to_regclass(` + rel + `) AND i.indisunique AND i.indisvalid AND i.indimmediate
		AND i.indpred IS NULL AND i.indexprs IS NULL AND k.ord <= i.indnkeyatts
		UNION ALL
		SELECT 2, 0, '', '', '', to_regnamespace(` + nsp + `) IS NOT NULL, false, 0, false, 0, 0 WHERE ` + nsp + ` <> ''
		UNION ALL
		SELECT 3, 0, '', '', '', true, false, 0, false, 0, 0 FROM pg_class c WHERE c.oid = to_regclass(` + rel + `) AND c.relkind = 'p'
		ORDER BY part, n, prim DESC, id, ord`
}

// readDescribed reads the rows of describeSQL for the table named name,
// next and scan being those of its result. The table it returns has no
// columns when there is no such table; then the schema of a qualified
// name was found when its Name is set (see described).
func readDescribed(name string, next func() bool, scan func(dest ...any) error) (*sink.Table, error) {
	t := &sink.Table{}
	last := int64(-1)
	for next() {
		var c sink.Column
		var part, n, typmod, id, ord int64
		var prim bool
		if err := scan(&part, &n, &c.Name, &c.SQLType, &c.TypeName, &c.NotNull, &c.Default, &typmod, &prim, &id, &ord); err != nil {
			return nil, err
		}
		switch part {
		case 1:
			if id != last {
				t.Keys = append(t.Keys, nil)
				last = id
			}
			t.Keys[len(t.Keys)-1] = append(t.Keys[len(t.Keys)-1], c.Name)
			continue
		case 2:
			if c.NotNull {
				t.Name = name
			}
			continue
		case 3:
			t.Partitioned = true
			continue
		}
		c.Kind = kindOf(c.TypeName)
		limits(&c, c.TypeName, int(typmod))
		t.Columns = append(t.Columns, c)
	}
	if len(t.Columns) > 0 {
		t.Name = name
	}
	return t, nil
}

// described is what describe returns for t, read by readDescribed: the
// table, nil when there is none, or sink.ErrNoSchema for a qualified name
// whose schema does not exist.
func described(name string, t *sink.Table) (*sink.Table, error) {
	if len(t.Columns) > 0 {
		return t, nil
	}
	if schema, _, _ := splitTable(name); schema != "" && t.Name == "" {
		return nil, fmt.Errorf("--table %s: %w %q in this database; create it first (CREATE SCHEMA %s), or name another", name, sink.ErrNoSchema, schema, q(schema))
	}
	return nil, nil
}

// Describe implements sink.Driver, in one round trip. An unqualified
// name is resolved through the search path. Each column's TypeName is its
// type's name in pg_catalog ("" for a type of another schema), as the
// Writer reads it (WriterFor).
func (Driver) Describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, error) {
	return describe(ctx, qr, name)
}

// Ensure implements sink.Driver. It holds a transaction-scoped advisory
// lock on the table's name, so that concurrent imports into a new table do
// not both try to create it: the second waits and then finds it.
func (d Driver) Ensure(ctx context.Context, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error {
	if err := d.LockTable(ctx, tx, ensureLock, tg.Table); err != nil {
		return fmt.Errorf("lock table %s: %w", tg.Table, err)
	}
	t, err := d.Describe(ctx, tx, tg.Table)
	if err != nil {
		return err
	}
	return ensureDescribed(ctx, tx, tg, schema, t)
}

// ensureLock is what Ensure's advisory lock is taken for (LockTable).
const ensureLock = "idemport ensure"

// EnsureOn is Ensure for tx, a transaction begun on conn, in one round
// trip fewer: the advisory lock and the describe are sent in one message,
// as a pipeline of two statements (each reads the catalog as of its own
// start, so the describe sees a table that the holder of the lock created
// before releasing it). A new table then costs two round trips, a table
// that fits one.
func (Driver) EnsureOn(ctx context.Context, conn *sql.Conn, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error {
	results, err := lockAndSend(ctx, conn, tg.Table)
	if err != nil {
		if len(results) == 0 || results[0].Err != nil {
			return fmt.Errorf("lock table %s: %w", tg.Table, err)
		}
		return fmt.Errorf("describe table %s: %w", tg.Table, err)
	}
	if len(results) != 2 {
		return fmt.Errorf("lock and describe table %s: %d results of 2 statements", tg.Table, len(results))
	}
	t, err := describedFrom(tg.Table, results[1])
	if err != nil {
		return err
	}
	return ensureDescribed(ctx, tx, tg, schema, t)
}

// EnsureHeld is EnsureOn followed by HoldColumnsDescribed (not lazy), for
// a table the caller found to exist, in one message where they were two:
// the advisory lock, the table's lock (LOCK TABLE, which fails where the
// table is gone), the version of its columns and its description, each
// statement run once the one before has (the lock waited for, the columns
// read under it). It returns the version and the table as
// HoldColumnsDescribed does. A table Ensure changes (a lineage column
// added) has its columns held and described again, after the change.
func (d Driver) EnsureHeld(ctx context.Context, conn *sql.Conn, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) (string, *sink.Table, error) {
	results, err := lockAndSend(ctx, conn, tg.Table,
		`LOCK TABLE `+quoteTable(tg.Table)+` IN ROW EXCLUSIVE MODE`,
		columnsVersion(literal(quoteTable(tg.Table))))
	if err != nil {
		return "", nil, fmt.Errorf("lock, hold and describe table %s: %w", tg.Table, err)
	}
	if len(results) != 4 {
		return "", nil, fmt.Errorf("lock, hold and describe table %s: %d results of 4 statements", tg.Table, len(results))
	}
	version := ""
	if rows := results[2].Rows; len(rows) == 1 && rows[0][0] != nil {
		version = string(rows[0][0])
	}
	t, err := describedFrom(tg.Table, results[3])
	if err != nil {
		return "", nil, err
	}
	if t == nil {
		return "", nil, fmt.Errorf("write %s: no such table", tg.Table)
	}
	changed := t.Column(sink.FileColumn) == nil || t.Column(sink.RowColumn) == nil
	if err := ensureDescribed(ctx, tx, tg, schema, t); err != nil {
		return "", nil, err
	}
	if changed {
		return d.HoldColumnsDescribed(ctx, conn, tg.Table, false)
	}
	return version, t, nil
}

// lockAndSend sends, in one message on conn (a pipeline, each statement
// run once the one before has), Ensure's advisory lock of table, then the
// statements between (without parameters), then table's describe, and
// returns every statement's result in order; on an error, the results
// read before it.
func lockAndSend(ctx context.Context, conn *sql.Conn, table string, between ...string) ([]*pgconn.Result, error) {
	lock, args := lockTableSQL(ensureLock, table)
	var results []*pgconn.Result
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection is a %T, not of the pgx driver", dc)
		}
		b := &pgconn.Batch{}
		params := make([][]byte, len(args))
		for i, a := range args {
			params[i] = []byte(a)
		}
		b.ExecParams(lock, params, nil, nil, nil)
		for _, s := range between {
			b.ExecParams(s, nil, nil, nil, nil)
		}
		b.ExecParams(describeSQL("$1", "$2::text"), [][]byte{[]byte(quoteTable(table)), []byte(schemaOf(table))}, nil, nil, nil)
		var err error
		results, err = c.Conn().PgConn().ExecBatch(ctx, b).ReadAll()
		return err
	})
	return results, err
}

// describedFrom reads table's description from the result of its
// describe statement (nil: there is no such table).
func describedFrom(table string, r *pgconn.Result) (*sink.Table, error) {
	rows, i := r.Rows, -1
	t, err := readDescribed(table, func() bool { i++; return i < len(rows) }, func(dest ...any) error { return scanText(rows[i], dest...) })
	if err == nil {
		t, err = described(table, t)
	}
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", table, err)
	}
	return t, nil
}

// ensureDescribed is the rest of Ensure once the lock is held and the
// table described as t (nil: there is none): it creates the table, or
// checks that it fits and adds the lineage columns it lacks.
func ensureDescribed(ctx context.Context, tx *sql.Tx, tg sink.Target, schema *arrow.Schema, t *sink.Table) error {
	if t == nil {
		if _, err := tx.ExecContext(ctx, createSQL(tg, schema)); err != nil {
			return fmt.Errorf("create table %s: %w", tg.Table, err)
		}
		return nil
	}
	if err := sink.Check(t, tg, schema); err != nil {
		return err
	}
	for _, name := range []string{sink.FileColumn, sink.RowColumn} {
		if t.Column(name) == nil {
			if err := alter(ctx, tx, `ALTER TABLE `+quoteTable(tg.Table)+` ADD COLUMN IF NOT EXISTS `+q(name)+` bigint`); err != nil {
				return fmt.Errorf("add lineage column %s to %s: %w", name, tg.Table, err)
			}
		}
	}
	return nil
}

func createSQL(tg sink.Target, schema *arrow.Schema) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE " + quoteTable(tg.Table) + " (\n")
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  %s bigint NOT NULL,\n  %s bigint NOT NULL,\n", q(sink.FileColumn), q(sink.RowColumn))
	}
	for _, f := range schema.Fields() {
		fmt.Fprintf(&b, "  %s %s", q(f.Name), sqlType(idemtype.TypeOf(f)))
		if slices.Contains(tg.Key, f.Name) {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(",\n")
	}
	if tg.Ordinal() {
		fmt.Fprintf(&b, "  PRIMARY KEY (%s, %s)\n)", q(sink.FileColumn), q(sink.RowColumn))
		return b.String()
	}
	fmt.Fprintf(&b, "  %s bigint,\n  %s bigint,\n  PRIMARY KEY (%s)\n)", q(sink.FileColumn), q(sink.RowColumn), quoteList(tg.Key, ""))
	return b.String()
}

// field is a column of the file and how its values reach the target
// column of the same name.
type field struct {
	name   string
	file   idemtype.Type // the file's type
	target sink.Column
	// text: the value is staged as text and cast to the target's type,
	// for types idemport does not know (domains, enums, dates, …), for
	// numeric columns receiving integers or floats (their exact text, never
	// through a float) and for text columns receiving other kinds.
	text bool
}

// expr is the staged value of f in the target column's type.
func (f *field) expr(alias string) string {
	e := alias + "." + q(f.name)
	if f.text && f.target.Kind != idemtype.String {
		e += "::" + f.target.SQLType
	}
	return e
}

// comparable is how the stored value of f (in t) is compared with a new
// one: json has no equality operator, a type idemport does not know is
// compared by its text, and so is numeric, whose equality ignores the scale
// (1.5 = 1.50) that the text keeps.
func (f *field) comparable(alias string) string {
	if f.target.TypeName == "json" || f.target.Kind == idemtype.Unknown || f.target.Kind == idemtype.Decimal {
		return alias + "." + q(f.name) + "::text"
	}
	return alias + "." + q(f.name)
}

// value returns row i of a as the Go value the staging column takes.
func (f *field) value(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	if f.text {
		return text(a, i)
	}
	switch a := a.(type) {
	case *array.Int64:
		if f.target.Kind == idemtype.Float64 {
			return float64(a.Value(i))
		}
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		// A local timestamp (no zone) as its wall clock in UTC, which
		// pgx's timestamp (without time zone) codec keeps, zone dropped:
		// the COPY is binary, and a text value has no binary encoding
		// into a timestamp column.
		return a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC()
	case *array.Date32:
		return text(a, i)
	case *array.String:
		return a.Value(i)
	}
	return fmt.Sprint(a.GetOneForMarshal(i))
}

// text renders row i of a as text: as PostgreSQL renders the same value,
// and timestamps as sink.FormatTimestamp does.
func text(a arrow.Array, i int) string {
	switch a := a.(type) {
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float64:
		// Into numeric or text (a float64 column takes the float8 itself):
		// plain digits, never an exponent.
		return sink.FormatFloat(a.Value(i), false)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		if t.TimeZone == "" {
			return sink.FormatLocalTimestamp(a.Value(i).ToTime(t.Unit).UnixMicro())
		}
		return sink.FormatTimestamp(a.Value(i).ToTime(t.Unit).UnixMicro())
	case *array.Date32:
		return sink.FormatDate(int32(a.Value(i)))
	case *array.String:
		return a.Value(i)
	}
	return fmt.Sprint(a.GetOneForMarshal(i))
}

// Columns of the staging table besides the file's.
const (
	roundColumn = "_idemport_round" // natural-key mode: the occurrence of the row's key in the batch, from 0
)

// writer merges batches into a target table through a staging table.
type writer struct {
	conn     *sql.Conn
	tg       sink.Target
	stage    string // staging table name, in pg_temp
	fields   []field
	keyIdx   []int    // schema positions of the key columns
	copyCols []string // staging columns in COPY order
	// truncate creates the staging table where it does not exist, and
	// empties it: run before a batch is staged in a transaction that
	// staged one already; create only creates it, run before the first
	// batch a transaction stages (see copy). staged: a batch was staged,
	// so the table may exist, and Close drops it; stagedTx, the
	// transaction that staged the last one.
	truncate, create string
	staged           bool
	stagedTx         *sql.Tx
	merge            string // $1 file key, $2 round (natural-key mode)
	// Natural-key mode: the merge without its ORDER BY, for a batch staged
	// in the order of its keys already (increasing).
	mergeStaged string
	count       string // natural-key mode: counts a round's stale rows; $1 file key, $2 round
	relineage   string // sink.Target.Loose: gives a round's unchanged rows of another file's lineage the file's; $1 file key, $2 round
	// stored: a key of one integer column: whether a key from $1 to $2
	// is stored, the greatest (0 when none is; see splitNew), and the
	// least stored above $2 (MaxInt64 when none is; see fresh); and
	// storedKey, whether key $1 is stored (see firstStored); storedFirst,
	// both in one statement: whether key $1 is stored, then what stored
	// says of $1 to $2.
	stored, storedKey, storedFirst string
	// fresh: the last batch, of increasing keys, went straight into the
	// target whole, after a look-up (or another such batch) that found
	// none of its keys stored; freshFrom is its last key, freshBelow the
	// least key stored above it as that look-up found (MaxInt64: none).
	// A next batch of increasing keys that starts above freshFrom and
	// below freshBelow is not looked up (see knownNew): in a first import
	// by a key, each batch but a writer's first was a look-up's round trip
	// before its COPY. A key another transaction stored since the look-up
	// makes that COPY fail, as it makes a looked-up batch's fail, and the
	// batch is merged.
	fresh                 bool
	freshFrom, freshBelow int64
	// When every column is copied in its target type, a batch whose rows'
	// keys are all absent is copied straight into the target, the cost of
	// a plain COPY. In ordinal mode a query finds whether any is stored
	// (present); in natural-key mode the COPY is tried under a savepoint
	// and the target's unique index tells (see tryDirect).
	direct     bool
	directCols []string
	present    string // $1 file key, $2 first ordinal, $3 last ordinal
	// Natural-key mode: whether the next batch is tried straight into the
	// target as one COPY, a batch of increasing integer keys before
	// splitNew looks up the stored ones. A batch that found a stored key
	// turns it off, so that a file of stored keys pays for one failed COPY
	// rather than one per batch; a batch none of whose keys was stored
	// (copied whole, or merged, every row inserted) turns it back on.
	tryDirect bool
	// enc writes COPY data straight from the Arrow buffers, when every
	// column's type allows; copyStage and copyDirect are its statements.
	enc        *encoder
	copyStage  string
	copyDirect string
	row        []any
	rounds     batchkey.Rounds
	// ints counts the occurrences of each key of a batch whose key is one
	// integer column without NULLs (numberInts).
	ints map[int64]int32
	// increasing: the batch numberRounds numbered last has one integer
	// key column, of an integer or numeric target column (which orders
	// the keys as integers do), in increasing order.
	increasing bool
	// The savepoint of a batch of WriteUnder: the look-ups (lookup), the
	// COPY straight into the target (copyNew) and, with the encoder, the
	// staging COPY (copy) take it in their own message; without the
	// encoder, the statements of a staged batch are sent after sp.Take.
	sp stdsql.BatchSavepoint
	// held is the savepoint of the last batch WriteUnder wrote whole,
	// left taken in heldTx, its transaction, for the message of the next
	// batch's first statement to release ("" when none is).
	held   string
	heldTx *sql.Tx
}

var _ sink.SavepointWriter = (*writer)(nil)

// Writer implements sink.Driver. The table must exist (Ensure creates it),
// and conn must be a connection of the pgx driver. A batch that is not
// copied straight into the table is staged in a temporary table on conn,
// which the first such batch creates (in its transaction), and Close
// drops: a writer none of whose batches is staged (a first import by a
// natural key, mostly) creates none. Write must be given transactions
// begun on conn.
func (d Driver) Writer(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema) (sink.Writer, error) {
	t, err := describe(ctx, conn, tg.Table)
	if err != nil {
		return nil, err
	}
	return d.WriterFor(ctx, conn, tg, schema, t)
}

// WriterFor is Writer for the table as t describes it, t being what
// Describe returned for tg.Table on conn (inside the transaction that
// holds its columns, so that they are still those): it sends nothing, where
// Writer describes the table first.
func (Driver) WriterFor(_ context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema, t *sink.Table) (sink.Writer, error) {
	if t == nil {
		return nil, fmt.Errorf("write %s: no such table", tg.Table)
	}
	byName := map[string]sink.Column{}
	for _, c := range t.Columns {
		byName[c.Name] = c
	}
	b := make([]byte, 8)
	rand.Read(b)
	w := &writer{conn: conn, tg: tg, stage: "idemport_stage_" + hex.EncodeToString(b)}
	w.rounds.Loose = tg.Loose
	if err := w.fieldsOf(schema, byName); err != nil {
		return nil, err
	}
	table := quoteTable(tg.Table)
	stage := "pg_temp." + q(w.stage)
	w.stageSQL(table, stage)
	m := w.mergeColumns(t)
	m.keys = []string{sink.FileColumn, sink.RowColumn}
	m.conflict = quoteList(m.keys, "")
	m.from = " FROM " + stage + " s"
	if !tg.Ordinal() {
		w.naturalKeys(&m, schema, table, stage)
	}
	action := m.action()
	w.copies(table, stage)
	returning, inserted := "t.xmax = 0 AS inserted", "inserted"
	if t.Partitioned {
		returning, inserted = m.partitioned(table)
	}
	merge := func(order string) string {
		return "WITH m AS (INSERT INTO " + table + " AS t (" + q(sink.FileColumn) + ", " + q(sink.RowColumn) + ", " + strings.Join(m.names, ", ") + ")" +
			" SELECT $1::bigint, s." + q(sink.RowColumn) + ", " + strings.Join(m.values, ", ") + m.from + order +
			" ON CONFLICT (" + m.conflict + ") " + action + " RETURNING " + returning + ")" +
			" SELECT count(*) FILTER (WHERE " + inserted + "), count(*) FILTER (WHERE NOT " + inserted + ") FROM m"
	}
	w.merge, w.mergeStaged = merge(m.order), merge("")
	return w, nil
}

// fieldsOf pairs each of the file's columns with the table's column of its
// name, and says which are staged as text.
func (w *writer) fieldsOf(schema *arrow.Schema, byName map[string]sink.Column) error {
	tg := w.tg
	for _, f := range schema.Fields() {
		c, ok := byName[f.Name]
		if !ok {
			return fmt.Errorf("write %s: it has no column %q", tg.Table, f.Name)
		}
		fd := field{name: f.Name, file: idemtype.TypeOf(f), target: c}
		switch {
		case c.Kind == idemtype.Unknown:
			fd.text = true
		case c.Kind == idemtype.String && fd.file != idemtype.String && fd.file != idemtype.JSON:
			fd.text = true
		case c.Kind == idemtype.Decimal && (fd.file != idemtype.Decimal || c.TypeName != "numeric"):
			fd.text = true // a decimal reaches numeric in binary; the rest as text, cast
		}
		w.fields = append(w.fields, fd)
	}
	for _, k := range tg.Key {
		w.keyIdx = append(w.keyIdx, schema.FieldIndices(k)[0])
	}
	return nil
}

// stageSQL makes the statements that create the staging table, when it
// does not exist (w.create), and empty it (w.truncate): its columns are the round
// (natural keys), the row ordinal, and the file's columns in the target's
// types (typmods and collations too), or as text when they are staged as
// text.
func (w *writer) stageSQL(table, stage string) {
	tg := w.tg
	var sel []string
	if !tg.Ordinal() {
		sel = append(sel, "NULL::integer AS "+q(roundColumn))
		w.copyCols = append(w.copyCols, roundColumn)
	}
	sel = append(sel, "NULL::bigint AS "+q(sink.RowColumn))
	w.copyCols = append(w.copyCols, sink.RowColumn)
	for _, f := range w.fields {
		if f.text {
			sel = append(sel, "NULL::text AS "+q(f.name))
		} else {
			sel = append(sel, "t."+q(f.name))
		}
		w.copyCols = append(w.copyCols, f.name)
	}
	w.create = "CREATE TEMP TABLE IF NOT EXISTS " + q(w.stage) + " ON COMMIT DELETE ROWS AS SELECT " + strings.Join(sel, ", ") +
		" FROM " + table + " t WITH NO DATA"
	w.truncate = w.create + "; TRUNCATE " + stage
}

// mergeParts are the pieces the merge statement is built of.
type mergeParts struct {
	names, values, data, stored, incoming, set []string
	conflict, from, order                      string
	guard                                      []string
	keys                                       []string // the columns of conflict
}

// partitioned is the merge's RETURNING list, and the condition on its row
// m that tells an inserted row, for a partitioned table, which returns no
// xmax: the row's key, and that no row of that key is in the table as the
// statement's snapshot sees it (the WITH's INSERT and the query reading
// its rows run with one snapshot, so the query does not see the rows the
// INSERT wrote). A key another transaction commits after that snapshot
// is counted new though the INSERT updated it, as the --atomic move of a
// partitioned table counts it (Driver.Merge); the table's rows are right.
func (m *mergeParts) partitioned(table string) (returning, inserted string) {
	var ret, on []string
	for _, k := range m.keys {
		ret = append(ret, "t."+q(k))
		on = append(on, "o."+q(k)+" = m."+q(k))
	}
	return strings.Join(ret, ", "), "NOT EXISTS (SELECT 1 FROM " + table + " o WHERE " + strings.Join(on, " AND ") + ")"
}

// mergeColumns lists the columns the merge inserts, and those a changed row
// writes: a changed row is written whole: the columns that are not the key,
// and the numeric key columns, whose stored text (1.5) the new row's (1.50)
// replaces though numeric finds them equal (sink.Rewritten).
func (w *writer) mergeColumns(t *sink.Table) mergeParts {
	var m mergeParts
	rewritten := sink.Rewritten(t, w.tg, columnNames(w.fields))
	for _, f := range w.fields {
		m.names = append(m.names, q(f.name))
		m.values = append(m.values, f.expr("s"))
		if !slices.Contains(rewritten, f.name) {
			continue
		}
		m.data = append(m.data, f.name)
		m.stored = append(m.stored, f.comparable("t"))
		m.incoming = append(m.incoming, f.comparable("excluded"))
		m.set = append(m.set, q(f.name)+" = excluded."+q(f.name))
	}
	return m
}

// naturalKeys makes the merge one of a round's rows by key, guarded against
// stale rows, and the statement that counts the stale rows.
func (w *writer) naturalKeys(m *mergeParts, schema *arrow.Schema, table, stage string) {
	tg := w.tg
	m.keys = tg.Key
	m.conflict = quoteList(m.keys, "")
	m.from += " WHERE s." + q(roundColumn) + " = $2"
	var keys, on []string
	for _, k := range w.keyIdx {
		keys = append(keys, w.fields[k].expr("s"))
		on = append(on, "t."+q(w.fields[k].name)+" = "+w.fields[k].expr("s"))
	}
	m.order = " ORDER BY " + strings.Join(keys, ", ")
	m.set = append(m.set, q(sink.FileColumn)+" = excluded."+q(sink.FileColumn), q(sink.RowColumn)+" = excluded."+q(sink.RowColumn))
	m.guard = append(m.guard, "NOT "+w.stale("excluded."+q(tg.Version), "excluded."+q(sink.FileColumn), "excluded."+q(sink.RowColumn)))
	ver := "NULL"
	if tg.Version != "" {
		ver = w.fields[schema.FieldIndices(tg.Version)[0]].expr("s")
	}
	if k := w.fields[w.keyIdx[0]]; len(w.keyIdx) == 1 && slices.Contains([]string{"int2", "int4", "int8"}, k.target.TypeName) {
		col := "t." + q(k.name)
		above := "coalesce((SELECT min(a." + q(k.name) + ") FROM " + table + " a WHERE a." + q(k.name) + " > $2::bigint), " + strconv.FormatInt(math.MaxInt64, 10) + ")::bigint"
		w.stored = "SELECT max(" + col + ") IS NOT NULL, coalesce(max(" + col + "), 0)::bigint, " + above + " FROM " + table + " t WHERE " + col + " BETWEEN $1::bigint AND $2::bigint"
		w.storedKey = "SELECT EXISTS (SELECT 1 FROM " + table + " t WHERE " + col + " = $1::bigint)"
		w.storedFirst = "SELECT EXISTS (SELECT 1 FROM " + table + " t WHERE " + col + " = $1::bigint), max(" + col + ") IS NOT NULL, coalesce(max(" + col + "), 0)::bigint, " + above + " FROM " + table + " t WHERE " + col + " BETWEEN $1::bigint AND $2::bigint"
	}
	// The stale rows, counted after the merge (see write).
	w.count = "SELECT count(*) FROM " + stage + " s JOIN " + table + " t ON " + strings.Join(on, " AND ") +
		" WHERE s." + q(roundColumn) + " = $2 AND " + w.stale(ver, "$1::bigint", "s."+q(sink.RowColumn))
	if tg.Loose {
		// The file holds keys the table may compare as one (sink.Target),
		// each in a round of its own (batchkey.Rounds.Loose): a row the
		// merge left, not older, stored by another file (so unchanged)
		// takes the file's lineage, still counted unchanged.
		w.relineage = "UPDATE " + table + " t SET " + q(sink.FileColumn) + " = $1::bigint, " + q(sink.RowColumn) + " = s." + q(sink.RowColumn) +
			" FROM " + stage + " s WHERE " + strings.Join(on, " AND ") + " AND s." + q(roundColumn) + " = $2 AND NOT " +
			w.stale(ver, "$1::bigint", "s."+q(sink.RowColumn)) + " AND NOT coalesce(t." + q(sink.FileColumn) + " = $1::bigint, false)"
	}
}

// action is the merge's ON CONFLICT action.
func (m *mergeParts) action() string {
	action := "DO NOTHING"
	if len(m.data) > 0 {
		m.guard = append(m.guard, "("+strings.Join(m.stored, ", ")+") IS DISTINCT FROM ("+strings.Join(m.incoming, ", ")+")")
		action = "DO UPDATE SET " + strings.Join(m.set, ", ") + " WHERE " + strings.Join(m.guard, " AND ")
	}
	return action
}

// copies sets up the copies: straight into the target when every column is
// copied in its target type, and from the Arrow buffers when the encoder
// takes every column.
func (w *writer) copies(table, stage string) {
	tg := w.tg
	w.direct, w.tryDirect = true, true
	for _, f := range w.fields {
		w.direct = w.direct && !f.text
	}
	w.directCols = append([]string{sink.FileColumn, sink.RowColumn}, w.copyCols[len(w.copyCols)-len(w.fields):]...)
	if tg.Ordinal() {
		w.present = "SELECT EXISTS (SELECT 1 FROM " + table + " WHERE " + q(sink.FileColumn) + " = $1 AND " + q(sink.RowColumn) + " BETWEEN $2 AND $3)"
	}
	if w.enc = newEncoder(w.fields); w.enc != nil {
		w.copyStage = copySQL(stage, w.copyCols)
		if w.direct {
			w.copyDirect = copySQL(table, w.directCols)
		}
	}
}

// stale is the condition under which an incoming row (version v, file key
// file, ordinal row) is older than the stored row t: the stored version is
// newer, or (with equal versions, or no version column) a later row of the
// same file was already applied. NULL is older than any version, and
// stored rows with NULL lineage (written by others) are never newer by
// position. It is never NULL, so that the count and the merge agree.
func (w *writer) stale(v, file, row string) string {
	cond := "coalesce(t." + q(sink.FileColumn) + " = " + file + " AND t." + q(sink.RowColumn) + " > " + row + ", false)"
	if w.tg.Version == "" {
		return cond
	}
	stored := "t." + q(w.tg.Version)
	return "((" + stored + " IS NOT NULL AND (" + v + " IS NULL OR " + v + " < " + stored + ")) OR (" + v + " IS NOT DISTINCT FROM " + stored + " AND " + cond + "))"
}

// Write implements sink.Writer. tx must have been begun on the Writer's
// connection: the batch is copied into the staging table through that
// connection, inside tx. A failure caused by the rows' values is a
// *sink.RowError; it aborts tx, as every failed statement does.
func (w *writer) Write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	c, err := w.write(ctx, tx, fileKey, rec, ordinals)
	return c, w.rowError(err)
}

// WriteUnder implements sink.SavepointWriter. The savepoint is taken in
// the message of the batch's first statement: the look-up of its first
// key, of its ordinals or of its stored keys (the two statements sent as
// one pipeline), the COPY straight into the target, or the staging COPY
// (with the encoder); and a batch copied straight into
// the target keeps that COPY's savepoint, which the release of name
// releases with it. A batch written whole leaves name taken: the next
// batch written in the same transaction releases it in the message that
// takes its own savepoint, before taking it, so that at most one is left
// taken (each is a subtransaction, and a transaction of more than 64
// makes every other session's snapshots costlier), and the last one is
// ended by the transaction's end. A batch copied straight into the target
// then costs two round trips where five were: under a loaded CPU each
// waits for the server's process and then this one's to be scheduled,
// 4-5 ms apiece in an import's statement log at load average 6; in a
// first import of 1M orders rows by their key the release was a round
// trip of its own after each of the 30 COPYs.
func (w *writer) WriteUnder(ctx context.Context, tx *sql.Tx, name string, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	release := ""
	if w.heldTx == tx {
		release = w.held
	}
	w.held, w.heldTx = "", nil
	w.sp.BeginAfter(release, name)
	defer w.sp.End()
	c, err := w.write(ctx, tx, fileKey, rec, ordinals)
	switch {
	case !w.sp.Taken(): // a batch of no rows sent nothing: the one before is held still
		if release != "" {
			w.held, w.heldTx = release, tx
		}
	case err == nil:
		w.held, w.heldTx = name, tx
	}
	return c, w.rowError(err)
}

// exists runs query, whose one row is one boolean, with args (int64s) in
// tx, through lookup.
func (w *writer) exists(ctx context.Context, tx *sql.Tx, query string, args ...any) (bool, error) {
	var found bool
	err := w.lookup(ctx, tx, query, []any{&found}, args...)
	return found, err
}

// lookup runs query, whose one row is scanned into dest (*bool or *int64,
// none NULL), with args (int64s) in tx. The savepoint of WriteUnder that no
// statement has taken yet is taken in the same round trip, after the
// release of the one an earlier batch left taken: they are sent as one
// pipeline of unnamed statements, and the query runs only once the
// savepoint is taken. They are not prepared: through pgx's statement
// cache, a connection's first batch was sent only after a round trip of its
// own that prepared the two (the overlap's, and each worker's, first batch).
func (w *writer) lookup(ctx context.Context, tx *sql.Tx, query string, dest []any, args ...any) error {
	release, name := w.sp.Claim()
	if name == "" {
		return tx.QueryRowContext(ctx, query, args...).Scan(dest...)
	}
	params := make([][]byte, len(args))
	for i, a := range args {
		v, ok := a.(int64)
		if !ok {
			return fmt.Errorf("look-up argument %d is a %T, not an int64", i+1, a)
		}
		params[i] = strconv.AppendInt(nil, v, 10)
	}
	return w.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection is a %T, not of the pgx driver", dc)
		}
		b := &pgconn.Batch{}
		n := 2 // statements; the query's result is the last
		if release != "" {
			b.ExecParams("RELEASE SAVEPOINT "+release, nil, nil, nil, nil)
			n++
		}
		b.ExecParams("SAVEPOINT "+name, nil, nil, nil, nil)
		b.ExecParams(query, params, nil, nil, nil)
		results, err := c.Conn().PgConn().ExecBatch(ctx, b).ReadAll()
		if err != nil {
			if len(results) < n { // the query did not run
				return fmt.Errorf("savepoint: %w", err)
			}
			return err
		}
		if len(results) != n || len(results[n-1].Rows) != 1 {
			return fmt.Errorf("%d results of %d statements", len(results), n)
		}
		return scanText(results[n-1].Rows[0], dest...)
	})
}

// rowError returns err as a *sink.RowError when the server refused the
// rows' values: an integrity constraint (SQLSTATE class 23), a data
// exception (class 22: out of range, too long, invalid input), an
// exception raised by a trigger (P0001), a row too big (54000), or a value
// pgx could not encode for COPY.
func rowError(err error) error {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) {
		return err
	}
	code := sink.CodeRefused
	switch {
	case strings.HasPrefix(pe.Code, "23"), pe.Code == "P0001":
		code = sink.CodeConstraint
	case strings.HasPrefix(pe.Code, "22"), pe.Code == "54000":
	case pe.Code == "57014" && strings.HasPrefix(pe.Message, "COPY from stdin failed"):
		// pgx could not encode a value for the column (an int64 past
		// int2, say) and ended the COPY: the server reports it as a
		// cancelled statement, with pgx's reason as the message.
	default:
		return err
	}
	msg := pe.Message
	if pe.Detail != "" {
		msg += ": " + pe.Detail
	}
	if pe.Where != "" && pe.Code == "22P02" {
		msg += " (" + pe.Where + ")"
	}
	return &sink.RowError{Code: code, Column: pe.ColumnName, Reason: fmt.Sprintf("%s (SQLSTATE %s)", msg, pe.Code), Err: err}
}

// rowError is rowError naming the column at fault where the server names
// only its type: a value an enum (SQLSTATE 22P02, "invalid input value for
// enum T") or a domain's CHECK (DataTypeName) refuses is of the one column
// of the writer's of that type; of none or of several, the column stays
// unnamed.
func (w *writer) rowError(err error) error {
	err = rowError(err)
	var re *sink.RowError
	var pe *pgconn.PgError
	if !errors.As(err, &re) || re.Column != "" || !errors.As(err, &pe) {
		return err
	}
	typ := pe.DataTypeName
	if rest, ok := strings.CutPrefix(pe.Message, "invalid input value for enum "); ok && typ == "" && pe.Code == "22P02" {
		if i := strings.Index(rest, `: "`); i > 0 {
			typ = bareType(rest[:i])
		}
	}
	if typ == "" {
		return err
	}
	for _, f := range w.fields {
		if bareType(f.target.SQLType) == typ {
			if re.Column != "" {
				re.Column = ""
				break
			}
			re.Column = f.name
		}
	}
	return err
}

// bareType is the name of the type t, as format_type writes it, without
// its schema, quotes or modifier: "sales"."Color" is Color.
func bareType(t string) string {
	if i := strings.IndexByte(t, '('); i > 0 && !strings.Contains(t[i:], `"`) {
		t = t[:i]
	}
	if strings.HasSuffix(t, `"`) {
		if i := strings.LastIndex(t[:len(t)-1], `."`); i >= 0 {
			t = t[i+1:]
		}
		return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(t, `"`), `"`), `""`, `"`)
	}
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:]
	}
	return t
}

func (w *writer) write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	var total idemtype.Rows
	n := int(rec.NumRows())
	if n == 0 {
		return total, nil
	}
	total.Read = int64(n)
	rounds := int32(1)
	if !w.tg.Ordinal() {
		rounds = w.numberRounds(rec)
	}
	// A batch none of whose keys repeat, after one that met no stored
	// key, is tried as one COPY first: in random order, or in increasing
	// order (a partition of a first import, sorted by its key, spans the
	// whole range of keys, stored ones among them, though none of its
	// own). One of increasing keys after a batch that met stored keys (a
	// delta's) is split at once.
	known, fresh := w.knownNew(rec, rounds)
	w.fresh = false
	if w.direct && !w.tg.Ordinal() && w.tryDirect && rounds == 1 && !fresh {
		stored, span, err := w.firstStored(ctx, tx, rec, ordinals)
		if err != nil {
			return total, err
		}
		w.tryDirect = !stored
		if stored && span != nil {
			return w.splitAt(ctx, tx, fileKey, rec, ordinals, 0, *span)
		}
		if span != nil && !span.found {
			known, fresh = *span, true
		}
	}
	if w.direct && !w.tg.Ordinal() && w.tryDirect && rounds == 1 {
		ok, copied, err := w.copyNew(ctx, tx, rec, fileKey, ordinals)
		if err != nil {
			return total, err
		}
		if ok {
			if fresh {
				w.keepFresh(rec, known)
			}
			total.Inserted, total.Unchanged = copied, int64(n)-copied
			return total, nil
		}
		fresh = false // a key was stored after all: looked up below
	}
	if w.direct && w.tg.Ordinal() {
		// The first load of a partition: no row of the batch's key range is
		// stored (the claim keeps other attempts out of the range), so the
		// rows are copied into the target as they are, all inserted.
		present, err := w.exists(ctx, tx, w.present, fileKey, ordinals[0], ordinals[n-1])
		if err != nil {
			return total, fmt.Errorf("look for %s in %s: %w", sink.RowSpan(ordinals), w.tg.Table, err)
		}
		if !present {
			copied, err := w.copyInto(ctx, tx, rec, fileKey, ordinals, "")
			if err != nil {
				return total, err
			}
			total.Inserted, total.Unchanged = copied, int64(n)-copied
			return total, nil
		}
	}
	// splitNew's look-up takes the savepoint of WriteUnder in its own
	// round trip, and the staging COPY in its message (with the encoder).
	if w.direct && w.increasing && w.stored != "" {
		if fresh && w.below(rec, known) {
			return w.splitAt(ctx, tx, fileKey, rec, ordinals, 0, known)
		}
		return w.splitNew(ctx, tx, fileKey, rec, ordinals, 0)
	}
	if w.direct && w.stored != "" && rounds == 1 {
		// Keys out of order that end with new keys above the rest, as a
		// delta of changed keys in any order and new keys after them has
		// them: the batch was not copied whole, its rising end may be.
		if a, ok := rec.Column(w.keyIdx[0]).(*array.Int64); ok && a.NullN() == 0 {
			if from := risingEnd(a.Int64Values()[:n]); from < n {
				return w.splitNew(ctx, tx, fileKey, rec, ordinals, from)
			}
		}
	}
	if w.enc == nil {
		if err := w.sp.Take(ctx, tx); err != nil {
			return total, err
		}
	}
	c, err := w.stageAndMerge(ctx, tx, fileKey, rec, ordinals, rounds)
	total.Add(c)
	w.tryDirect = total.Inserted == int64(n)
	return total, err
}

// perBatch, as a statement's first argument, has pgx prepare the
// statement on the server on its first run on a connection and run it
// prepared after: the statements every batch runs (the merge, the
// lineage and the count of stale rows) are parsed once, not once per
// batch as the connection's other statements are (configure).
const perBatch = pgx.QueryExecModeCacheStatement

// stageAndMerge copies the rows of rec into the staging table and merges
// them into the target, in rounds (natural-key mode). It counts all but
// the rows read.
func (w *writer) stageAndMerge(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64, rounds int32) (idemtype.Rows, error) {
	var total idemtype.Rows
	n := int(rec.NumRows())
	if err := w.copy(ctx, tx, rec, ordinals); err != nil {
		return total, err
	}
	if w.tg.Ordinal() {
		var ins, upd int64
		if err := tx.QueryRowContext(ctx, w.merge, perBatch, fileKey).Scan(&ins, &upd); err != nil {
			return total, fmt.Errorf("upsert into %s (%s): %w", w.tg.Table, sink.RowSpan(ordinals), err)
		}
		total.Inserted, total.Updated, total.Unchanged = ins, upd, int64(n)-ins-upd
		return total, nil
	}
	per := make([]int64, rounds)
	for _, r := range w.rounds.Of[:n] {
		per[r]++
	}
	// The merge takes the staged rows in the order of their keys, so that
	// merges of one key range, in concurrent transactions, lock its rows
	// in the same order and do not deadlock. Rows copied in increasing
	// order of their keys are in that order already: the staging table,
	// emptied before the COPY and without an index, is read by a
	// sequential scan in the order the COPY wrote it, and the sort is
	// left out (a batch's rows are more than the default work_mem, so it
	// went to disk).
	merge := w.merge
	if w.increasing {
		merge = w.mergeStaged
	}
	for r := range rounds {
		var ins, upd, stale int64
		if err := tx.QueryRowContext(ctx, merge, perBatch, fileKey, r).Scan(&ins, &upd); err != nil {
			return total, fmt.Errorf("upsert into %s (%s): %w", w.tg.Table, sink.RowSpan(ordinals), err)
		}
		// The rows neither inserted nor updated are stale or unchanged,
		// and are counted apart only when there are any: a join of the
		// staging table with the target costs a probe of the key's index
		// per row. It runs after the merge, which leaves the rows it did
		// not touch as they were and holds them locked (ON CONFLICT DO
		// UPDATE locks the rows its WHERE refuses), so it sees them as the
		// merge judged them; a row the merge inserted or updated is never
		// stale against itself.
		rest := per[r] - ins - upd
		if rest > 0 && w.relineage != "" {
			if _, err := tx.ExecContext(ctx, w.relineage, perBatch, fileKey, r); err != nil {
				return total, fmt.Errorf("record the lineage of %s of %s: %w", sink.RowSpan(ordinals), w.tg.Table, err)
			}
		}
		if rest > 0 {
			if err := tx.QueryRowContext(ctx, w.count, perBatch, fileKey, r).Scan(&stale); err != nil {
				return total, fmt.Errorf("count stale rows of %s (%s): %w", w.tg.Table, sink.RowSpan(ordinals), err)
			}
		}
		// Only a target without other columns than the key (DO NOTHING)
		// leaves rows unlocked, which another transaction may change
		// before the count: the count stays within the rows left.
		stale = min(stale, rest)
		total.Inserted += ins
		total.Updated += upd
		total.Stale += stale
		total.Unchanged += rest - stale
	}
	return total, nil
}

// splitNew writes a batch whose keys are one integer column, all apart,
// those of rows from to the end in increasing order and greater than
// every key before them (from is 0 for a batch in increasing order,
// w.increasing): the rows up to the greatest key of that range that is
// stored are merged, and the rows after it, whose keys are not stored, are
// copied straight into the target (copyNew), as a daily delta (changed
// keys, then new ones after the last) has them. A COPY refused by a key
// stored since the look-up (another transaction's) is rolled back, and its
// rows are merged too. Rows are written in the order of their keys, as a
// merge writes them, so that concurrent writers take the keys' locks in
// one order.
func (w *writer) splitNew(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64, from int) (idemtype.Rows, error) {
	n := int(rec.NumRows())
	total := idemtype.Rows{Read: int64(n)}
	keys := rec.Column(w.keyIdx[0]).(*array.Int64).Int64Values()[:n]
	var span storedSpan
	if err := w.lookup(ctx, tx, w.stored, []any{&span.found, &span.last, &span.above}, keys[from], keys[n-1]); err != nil {
		return total, fmt.Errorf("look up stored keys of %s (%s): %w", w.tg.Table, sink.RowSpan(ordinals[from:]), err)
	}
	return w.splitAt(ctx, tx, fileKey, rec, ordinals, from, span)
}

// storedSpan is what w.stored says of the keys of a batch from a row to
// its last: whether any is stored, the greatest that is, and the least
// stored key above the last (math.MaxInt64 when none is).
type storedSpan struct {
	found bool
	last  int64
	above int64
}

// knownNew returns, for a batch of rec's rows (rounds: numberRounds's)
// that the batch before it leaves fresh, what a look-up of its keys
// would have found (none stored, the least stored above its last key
// being the same as for the batch before), and true, when its keys are
// increasing and its first lies above the last key of the batch before
// and below the least stored above that: the batch's first key is not
// stored, nor any key up to the least stored above it. Otherwise false.
func (w *writer) knownNew(rec arrow.RecordBatch, rounds int32) (storedSpan, bool) {
	if !w.fresh || !w.increasing || rounds != 1 || rec.NumRows() == 0 {
		return storedSpan{}, false
	}
	a, ok := rec.Column(w.keyIdx[0]).(*array.Int64)
	if !ok || a.NullN() != 0 {
		return storedSpan{}, false
	}
	if first := a.Value(0); first <= w.freshFrom || first >= w.freshBelow {
		return storedSpan{}, false
	}
	return storedSpan{above: w.freshBelow}, true
}

// below reports whether the last key of rec, a batch of increasing
// integer keys, lies below span.above: with none of the keys up to its
// first stored, none of its keys is.
func (w *writer) below(rec arrow.RecordBatch, span storedSpan) bool {
	a := rec.Column(w.keyIdx[0]).(*array.Int64)
	return a.Value(a.Len()-1) < span.above
}

// keepFresh records that rec, a batch of increasing integer keys, went
// straight into the target whole, none of its keys stored and the least
// key stored above its last being span.above as a look-up found it: the
// next batch may then not be looked up (knownNew). A batch whose keys
// reach that stored key leaves nothing known.
func (w *writer) keepFresh(rec arrow.RecordBatch, span storedSpan) {
	a, ok := rec.Column(w.keyIdx[0]).(*array.Int64)
	if !ok || a.NullN() != 0 || !w.increasing {
		return
	}
	if last := a.Value(a.Len() - 1); last < span.above {
		w.fresh, w.freshFrom, w.freshBelow = true, last, span.above
	}
}

// splitAt is splitNew once the keys from row from to the end were looked
// up (span), the savepoint of WriteUnder taken with the look-up: the
// statements it sends run under it.
func (w *writer) splitAt(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64, from int, span storedSpan) (idemtype.Rows, error) {
	n := int(rec.NumRows())
	total := idemtype.Rows{Read: int64(n)}
	keys := rec.Column(w.keyIdx[0]).(*array.Int64).Int64Values()[:n]
	split := from
	if span.found {
		split += sort.Search(n-from, func(i int) bool { return keys[from+i] > span.last })
	}
	if split > 0 {
		head := rec.NewSlice(0, int64(split))
		c, err := w.stageAndMerge(ctx, tx, fileKey, head, ordinals[:split], 1)
		head.Release()
		total.Add(c)
		if err != nil {
			return total, err
		}
	}
	if split == n {
		return total, nil
	}
	tail := rec
	if split > 0 {
		tail = rec.NewSlice(int64(split), int64(n))
		defer tail.Release()
	}
	ok, copied, err := w.copyNew(ctx, tx, tail, fileKey, ordinals[split:])
	if err != nil {
		return total, err
	}
	if ok {
		w.keepFresh(tail, span)
		total.Inserted += copied
		total.Unchanged += int64(n-split) - copied
		// The whole batch copied, none of its keys stored: the next is
		// tried as one COPY.
		w.tryDirect = split == 0
		return total, nil
	}
	c, err := w.stageAndMerge(ctx, tx, fileKey, tail, ordinals[split:], 1)
	total.Add(c)
	return total, err
}

// firstStored reports whether the key of the first row of rec, one
// integer column, is stored: a COPY of the batch would then fail at its
// first row. A delta's first batch, its keys in key order, starts with
// stored keys (changed rows) after a batch copied whole (the previous
// partition's new keys): the doomed COPY, its encoding, its round trips and
// its subtransaction's rollback took 25-40 ms a partition, the look-up
// takes one index probe. A key of another kind is not looked up (false).
//
// A batch in increasing order of its keys (w.increasing), split at once
// when its first key is stored (splitNew), has the split's look-up of its
// keys (w.stored) in the same statement, returned as span (nil for
// another batch): its first statements to the server are then one round
// trip where they were two (a delta's first batch's, and each one's after
// a batch copied whole).
func (w *writer) firstStored(ctx context.Context, tx *sql.Tx, rec arrow.RecordBatch, ordinals []int64) (bool, *storedSpan, error) {
	if w.storedKey == "" {
		return false, nil, nil
	}
	a, ok := rec.Column(w.keyIdx[0]).(*array.Int64)
	if !ok || a.IsNull(0) {
		return false, nil, nil
	}
	if w.increasing {
		var stored bool
		var span storedSpan
		err := w.lookup(ctx, tx, w.storedFirst, []any{&stored, &span.found, &span.last, &span.above}, a.Value(0), a.Value(int(rec.NumRows())-1))
		if err != nil {
			return false, nil, fmt.Errorf("look up stored keys of %s (%s): %w", w.tg.Table, sink.RowSpan(ordinals), err)
		}
		return stored, &span, nil
	}
	stored, err := w.exists(ctx, tx, w.storedKey, a.Value(0))
	if err != nil {
		return false, nil, fmt.Errorf("look up stored keys of %s (%s): %w", w.tg.Table, sink.RowSpan(ordinals[:1]), err)
	}
	return stored, nil, nil
}

// risingEnd returns where the keys that end keys in increasing order
// start to be greater than every key before them, or len(keys) when none
// are.
func risingEnd(keys []int64) int {
	j := len(keys) - 1
	for j > 0 && keys[j-1] < keys[j] {
		j--
	}
	if j == 0 {
		return 0
	}
	m := slices.Max(keys[:j])
	return j + sort.Search(len(keys)-j, func(i int) bool { return keys[j+i] > m })
}

// numberRounds numbers the rows of rec by the occurrence of their key
// (batchkey.Rounds) and returns the number of rounds. A key of one integer
// column without NULLs is counted by its integer: batchkey.Append makes
// an integer its digits, so two such keys make the same bytes exactly when
// their integers are equal, and the rounds are the same, for the cost of a
// map of integers rather than a string per row.
func (w *writer) numberRounds(rec arrow.RecordBatch) int32 {
	n := int(rec.NumRows())
	w.increasing = false
	if len(w.keyIdx) == 1 {
		if a, ok := rec.Column(w.keyIdx[0]).(*array.Int64); ok && a.NullN() == 0 {
			return w.numberInts(a.Int64Values()[:n])
		}
	}
	return w.rounds.Number(n, func(buf []byte, i int) []byte {
		for _, k := range w.keyIdx {
			buf = w.fields[k].key(buf, rec.Column(k), i)
		}
		return buf
	})
}

// numberInts is batchkey.Rounds.Number for keys that are the integers
// keys. Keys in increasing order (a file sorted by its key, as an export
// by id is) are all apart, and need no map.
func (w *writer) numberInts(keys []int64) int32 {
	r := &w.rounds
	r.Of = r.Of[:0]
	increasing := true
	for i := 1; i < len(keys) && increasing; i++ {
		increasing = keys[i-1] < keys[i]
	}
	if increasing {
		r.Of = slices.Grow(r.Of, len(keys))[:len(keys)]
		clear(r.Of)
		switch w.fields[w.keyIdx[0]].target.TypeName {
		case "int2", "int4", "int8", "numeric":
			w.increasing = true
		}
		return 1
	}
	if w.ints == nil {
		w.ints = make(map[int64]int32, len(keys))
	}
	clear(w.ints)
	rounds := int32(1)
	for _, k := range keys {
		c := w.ints[k]
		w.ints[k] = c + 1
		r.Of = append(r.Of, c)
		rounds = max(rounds, c+1)
	}
	return rounds
}

// directSavepoint names the savepoint a natural-key batch is copied
// straight into the target under. It nests inside any savepoint of the
// caller.
const directSavepoint = "idemport_direct"

// copyNew copies the rows of rec straight into the target, all of them
// inserted but those the table's triggers skipped (it returns how many
// rows the table took: see copyInto), when none of their keys is stored;
// it reports false, having written nothing, when one is. The COPY runs under a savepoint: the
// target's unique index on the key (every natural-key target has one: see
// sink.Check) refuses a stored key with a unique violation, which rolls
// the COPY back to the savepoint, and the batch is then staged and merged.
// The COPY stops at the first such row, so a batch of stored keys loses
// little; a batch whose first stored key comes late loses most of a COPY,
// which is why a refused batch turns direct copies off (tryDirect) until
// a merge inserts every row of its batch again.
//
// A deadlock (the rows are copied in file order, not in key order, so
// two transactions copying the same new keys in different orders can
// wait on each other) is handled the same way: the savepoint's rollback
// releases the keys the COPY had written, and the merge, in key order,
// waits for the other transaction instead.
//
// With the encoder, the savepoint is taken by the COPY's own message
// ("SAVEPOINT …; COPY …", one round trip where two were): the server runs
// the two in order and stops at the first that fails, so the COPY runs
// only under the savepoint.
func (w *writer) copyNew(ctx context.Context, tx *sql.Tx, rec arrow.RecordBatch, fileKey int64, ordinals []int64) (bool, int64, error) {
	prefix := "SAVEPOINT " + directSavepoint + "; "
	if w.enc == nil {
		if err := w.sp.Take(ctx, tx); err != nil {
			return false, 0, err
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT "+directSavepoint); err != nil {
			return false, 0, fmt.Errorf("savepoint: %w", err)
		}
		prefix = ""
	} else {
		// The savepoint of WriteUnder, if not yet taken, in the same
		// message, first.
		prefix = w.sp.Prefix() + prefix
	}
	copied, err := w.copyInto(ctx, tx, rec, fileKey, ordinals, prefix)
	if err == nil {
		// Under WriteUnder the COPY was the batch's last statement: the
		// release of its savepoint releases this one, inside it.
		if w.sp.Under != "" {
			return true, copied, nil
		}
		if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+directSavepoint); err != nil {
			return false, 0, fmt.Errorf("release savepoint: %w", err)
		}
		return true, copied, nil
	}
	var pe *pgconn.PgError
	// 23505: unique_violation; 40P01: deadlock_detected.
	if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "40P01") {
		return false, 0, err
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+directSavepoint+"; RELEASE SAVEPOINT "+directSavepoint); err != nil {
		return false, 0, fmt.Errorf("roll back to savepoint: %w", err)
	}
	w.tryDirect = false
	return false, 0, nil
}

// columnNames returns the names of fields, in order.
func columnNames(fields []field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}

// key appends row i of a to a batch key (batchkey.Append): char(n)
// ignores trailing spaces, and numeric compares numbers by value (1.5 is
// 1.50, 1 is 1.0). Values equal only under rules idemport does not know
// (a case-insensitive type or collation) are not found equal: such a
// batch fails to merge with PostgreSQL's "cannot affect row a second
// time".
func (f *field) key(buf []byte, a arrow.Array, i int) []byte {
	cmp := batchkey.Text
	switch f.target.TypeName {
	case "bpchar":
		cmp = batchkey.Padded
	case "numeric":
		cmp = batchkey.Number
	}
	return batchkey.Append(buf, a, i, cmp, text)
}

// copy copies the rows of rec into the staging table with COPY, through
// the pgx connection under the Writer's database/sql connection, and so
// inside tx, the transaction open on it.
func (w *writer) copy(ctx context.Context, tx *sql.Tx, rec arrow.RecordBatch, ordinals []int64) error {
	src := &source{w: w, rec: rec, ordinals: ordinals, i: -1}
	var copied int64
	err := w.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection is a %T, not of the pgx driver", dc)
		}
		// The previous batch of this transaction is still staged. DELETE
		// would leave its rows dead, to be scanned by every later batch
		// of the transaction, whereas TRUNCATE starts an empty file.
		// The staging table is created first, in the same message, where
		// it does not exist: by the first batch staged, and again after
		// a rollback undid its creation (of that batch's savepoint, as a
		// batch with a refused row's is, or of its transaction), which
		// the writer cannot see. Where it exists, that costs a look-up
		// of its name.
		//
		// With the encoder, the two go in the COPY's own message, after
		// the savepoint of WriteUnder if no statement has taken it yet
		// ("SAVEPOINT …; CREATE …; TRUNCATE …; COPY …"): the server runs
		// them in order and stops at the first that fails, one round trip
		// where two or three were. Without it, the caller took the
		// savepoint.
		//
		// The first batch a transaction stages finds the table empty, and
		// is not preceded by the TRUNCATE, which costs more than the COPY
		// of a small batch (a new file for the table, its catalog row
		// rewritten, under a savepoint's subtransaction every time): the
		// table deletes its rows at every commit (ON COMMIT DELETE ROWS),
		// a rollback undoes a transaction's rows, and no one but this
		// writer writes it (its name is the writer's alone). A later
		// batch of the same transaction finds the rows of the one before.
		w.staged = true
		empty := w.truncate
		if w.stagedTx != tx {
			empty = w.create
		}
		w.stagedTx = tx
		if w.enc != nil {
			nlead := 1
			if !w.tg.Ordinal() {
				nlead = 2
			}
			data := w.enc.stream(rec, nlead, func(b []byte, i int) []byte {
				if nlead == 2 {
					b = appendInt4(b, w.rounds.Of[i])
				}
				return appendInt8(b, ordinals[i])
			})
			defer data.close() // before rec may be released: see stream.mu
			// The tag is the message's last statement's: the COPY's.
			tag, err := c.Conn().PgConn().CopyFrom(ctx, data, w.sp.Prefix()+empty+"; "+w.copyStage)
			copied = tag.RowsAffected()
			return err
		}
		if _, err := c.Conn().Exec(ctx, empty); err != nil {
			return err
		}
		var err error
		copied, err = c.Conn().CopyFrom(ctx, pgx.Identifier{"pg_temp", w.stage}, w.copyCols, src)
		return err
	})
	if err != nil {
		return fmt.Errorf("copy %s for %s: %w", sink.RowSpan(ordinals), w.tg.Table, err)
	}
	if copied != rec.NumRows() {
		return fmt.Errorf("copy rows for %s: copied %d of %d", w.tg.Table, copied, rec.NumRows())
	}
	return nil
}

// copyInto copies the rows of rec straight into the target table, with
// their file key and ordinals, inside tx, the transaction open on the
// Writer's connection, and returns how many rows the table took. With the
// encoder, prefix (statements, each ended by "; ") runs first in the
// COPY's message; without it, prefix must be "". Fewer rows than rec's are
// what happened only in a table whose triggers may skip the rows they are
// given (RewritesRows: a BEFORE trigger returning NULL); in any other
// table they are an error.
func (w *writer) copyInto(ctx context.Context, tx *sql.Tx, rec arrow.RecordBatch, fileKey int64, ordinals []int64, prefix string) (int64, error) {
	src := &source{w: w, rec: rec, ordinals: ordinals, i: -1, fileKey: &fileKey}
	var copied int64
	err := w.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection is a %T, not of the pgx driver", dc)
		}
		if w.enc != nil {
			data := w.enc.stream(rec, 2, func(b []byte, i int) []byte {
				return appendInt8(appendInt8(b, fileKey), ordinals[i])
			})
			defer data.close() // before rec may be released: see stream.mu
			// The tag is the message's last statement's: the COPY's.
			tag, err := c.Conn().PgConn().CopyFrom(ctx, data, prefix+w.copyDirect)
			copied = tag.RowsAffected()
			return err
		}
		var err error
		copied, err = c.Conn().CopyFrom(ctx, identifier(w.tg.Table), w.directCols, src)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("copy %s into %s: %w", sink.RowSpan(ordinals), w.tg.Table, err)
	}
	if copied == rec.NumRows() {
		return copied, nil
	}
	if copied < rec.NumRows() {
		skips, err := Driver{}.RewritesRows(ctx, tx, w.tg.Table)
		if err != nil {
			return 0, err
		}
		if skips {
			return copied, nil
		}
	}
	return 0, fmt.Errorf("copy rows into %s: copied %d of %d", w.tg.Table, copied, rec.NumRows())
}

// identifier is a possibly schema-qualified table name for pgx, read as
// splitTable reads it.
func identifier(table string) pgx.Identifier {
	schema, name, err := splitTable(table)
	switch {
	case err != nil:
		return pgx.Identifier{table}
	case schema == "":
		return pgx.Identifier{name}
	}
	return pgx.Identifier{schema, name}
}

// source feeds a batch to CopyFrom row by row.
type source struct {
	w        *writer
	rec      arrow.RecordBatch
	ordinals []int64
	i        int
	fileKey  *int64 // set when copying straight into the target
}

func (s *source) Next() bool {
	s.i++
	return s.i < int(s.rec.NumRows())
}

// Values reuses one slice: CopyFrom encodes a row before asking for the next.
func (s *source) Values() ([]any, error) {
	row := s.w.row[:0]
	if s.fileKey != nil {
		row = append(row, *s.fileKey)
	} else if !s.w.tg.Ordinal() {
		row = append(row, s.w.rounds.Of[s.i])
	}
	row = append(row, s.ordinals[s.i])
	for c := range s.w.fields {
		row = append(row, s.w.fields[c].value(s.rec.Column(c), s.i))
	}
	s.w.row = row
	return row, nil
}

func (s *source) Err() error { return nil }

// Close implements sink.Writer: it drops the staging table, if a batch
// was staged. The drop is its own transaction (the two statements of one
// message are one), whose COMMIT need not wait for the log to reach the
// disk: the table is the session's alone, and a crash that loses the drop
// ends the session, which drops it all the same. With the session's
// synchronous_commit, the drop waited for a flush of its catalog rows
// between the last partition's COMMIT and the completion (a statement of
// 4-9 ms rather than 2-7 ms at load average 11, and up to 68 ms in an
// import's statement log). SET LOCAL leaves the session's setting as it
// was, for the transactions the pool gives the connection next (the
// completion among them).
func (w *writer) Close() error {
	if !w.staged {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.conn.ExecContext(ctx, "SET LOCAL synchronous_commit = off; DROP TABLE IF EXISTS pg_temp."+q(w.stage)); err != nil {
		return fmt.Errorf("drop staging table of %s: %w", w.tg.Table, err)
	}
	return nil
}

// DeleteFile implements sink.Driver.
func (d Driver) DeleteFile(ctx context.Context, tx *sql.Tx, table string, fileKey int64) (int64, error) {
	t, err := d.Describe(ctx, tx, table)
	if err != nil || t == nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM `+quoteTable(table)+` WHERE `+q(sink.FileColumn)+` = $1`, fileKey)
	if err != nil {
		return 0, fmt.Errorf("delete rows of file %d from %s: %w", fileKey, table, err)
	}
	return res.RowsAffected()
}

// Locked implements sink.Driver: a statement waited for a row, table or
// advisory lock past lock_timeout, which Open sets to the busy timeout.
func (Driver) Locked(err error) bool { return lockNotAvailable(err) }
