// Package sink is the contract a target database's driver fulfils, and
// what is the same for every database: target tables, the lineage
// columns, the checks of a file against a table, staging merges and
// snapshot sweeps.
//
// The target database holds the imported rows, idemport's ledger and its
// checkpoints. [Driver] is everything that differs between databases
// (opening from a DSN, settings, migrations, SQL spelling, locks, the
// batch Writer); the drivers are sink/sqlite and sink/postgres, and a
// [Registry] chooses one by the DSN. Code outside the drivers asks the
// driver and never tests which database it is. Every driver passes the
// conformance suite in sink/drivertest (River's riverdriver and
// riverdrivertest are the model); the Driver's doc comment lists what a
// new one must provide.
//
// A Writer creates nothing and writes record batches into a target table
// idempotently, inside a transaction the caller owns.
//
// Rows are keyed either by their row identity in the file (ordinal mode: the
// primary key is the file key and the row ordinal, which are also the row's
// lineage) or by natural key columns (the key columns are the primary key or
// a unique index, and the lineage columns record which file and row last
// wrote the row). A write that would change nothing leaves the row as it is
// and is counted unchanged; in natural-key mode a row older than the stored
// one, by the version column or by its position in the same file, is counted
// stale and not applied.
//
// Which occurrence of a key wins within one file is decided by the plan
// pass (package reader): rows a later row of their file supersedes never
// reach a Writer. The position check serves rows of a file applied after it
// completed (replayed rejects), which must not undo a later row of the file.
package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
)

// The lineage columns every target table has. In ordinal mode they are the
// primary key.
const (
	FileColumn = "_idemport_file" // file key: a 64-bit hash of the file ID
	RowColumn  = "_idemport_row"  // the row's 1-based ordinal in that file
)

// Reserved is the prefix of column names idemport keeps for itself.
const Reserved = "_idemport_"

// Target says where rows go and how they are keyed.
type Target struct {
	Table   string
	Key     []string // natural key columns; empty means ordinal mode
	Version string   // version column (natural-key mode only); empty means none
	// Loose (natural-key mode only) says the file holds keys that its
	// plan tells apart but the table's collation may compare as one ('a'
	// and 'A'; reader.Plan.Loose): the MariaDB and PostgreSQL writers
	// then put such keys of a batch in rounds of their own
	// (batchkey.Rounds.Loose) and record the file's lineage on an
	// unchanged row stored by another file too (still counted unchanged),
	// so that the row of the file behind it by the table's key, met after
	// it, is found older (stale), not written over it. Without it an
	// unchanged row is not written at all. The SQLite writer, which
	// applies a batch a row at a time in file order, records the lineage
	// so too.
	Loose bool
}

// Ordinal reports whether rows are keyed by their row identity in the file.
func (t Target) Ordinal() bool { return len(t.Key) == 0 }

// Column is a column of an existing table.
type Column struct {
	Name    string
	SQLType string
	Kind    idemtype.Type // the type its SQL type holds, or Unknown when none maps
	NotNull bool
	Default bool // has a default value
	// What the column holds beyond its kind, so that values it cannot
	// hold are found before any write. Zero means no such limit.
	IntBits   int  // 16 or 32: an integer narrower than int64 (smallint, integer)
	MaxChars  int  // varchar(n) or char(n): at most n characters
	Numeric   bool // an exact decimal (PostgreSQL numeric), of Precision and Scale when Precision > 0
	Precision int
	Scale     int
	JSONB     bool // PostgreSQL jsonb, which refuses \u0000 and numbers beyond numeric
	// TimeUnit is the microseconds of the finest step a timestamp column
	// keeps when it keeps less than a microsecond's (PostgreSQL
	// timestamp(0): 1000000), which it rounds a value to (TimeTruncates:
	// truncates, as MariaDB's DATETIME(p) does); 0 for any other column.
	TimeUnit      int64
	TimeTruncates bool
	// TypeName is the name of the column's type where the driver's
	// writer needs it beyond Kind and SQLType (PostgreSQL: its name in
	// pg_catalog, "" for a type of another schema), and "" elsewhere.
	TypeName string
	// Collation is the collation the column's text compares by where the
	// driver reads one: MariaDB's collation_name of a text column, SQLite's
	// of the first unique index over the column that compares it other
	// than as BINARY (a key column's COLLATE NOCASE); "" elsewhere
	// (PostgreSQL, whose comparisons take a column's collation over the
	// default one).
	Collation string
}

// Table describes an existing table.
type Table struct {
	Name    string
	Columns []Column
	// Keys lists the primary key and every unique index, each as its
	// column names.
	Keys [][]string
	// Partitioned: the table is partitioned (PostgreSQL), and an INSERT
	// into it returns none of its rows' system columns.
	Partitioned bool
}

// Column returns the column named name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// Kind returns the kind of t's column name, or Unknown when t has none.
func (t *Table) Kind(name string) idemtype.Type {
	if c := t.Column(name); c != nil {
		return c.Kind
	}
	return idemtype.Unknown
}

// Rewritten returns, of columns (a file's), those that an upsert into t
// for tg compares with a stored row and writes over it: in ordinal mode
// all of them; by natural key those that are not key columns, and the key
// columns holding decimals, which are one key when equal in value
// (Driver.KeyValue) while the row that wins keeps its own text: 1.50
// replaces a stored 1.5.
func Rewritten(t *Table, tg Target, columns []string) []string {
	var out []string
	for _, c := range columns {
		if !slices.Contains(tg.Key, c) || t.Kind(c) == idemtype.Decimal {
			out = append(out, c)
		}
	}
	return out
}

// HasKey reports whether cols (in any order) are the primary key or a
// unique index of t.
func (t *Table) HasKey(cols []string) bool {
	want := slices.Sorted(slices.Values(cols))
	for _, k := range t.Keys {
		if slices.Equal(slices.Sorted(slices.Values(k)), want) {
			return true
		}
	}
	return false
}

// ErrNoSchema means a schema-qualified table name names a schema that does
// not exist: a mistake in the command, not something to create.
var ErrNoSchema = errors.New("no such schema")

// Writer upserts batches into a target table.
type Writer interface {
	// Write upserts the rows of rec, whose ordinals in the file with key
	// fileKey are ordinals, inside tx, and counts what happened to them.
	// Rows of one Write are applied in order. Every row it writes is
	// inside tx: a Write into a transaction that is over, or under a
	// cancelled ctx, fails and writes nothing, and a rollback of tx while
	// a Write runs (database/sql rolls back a transaction whose context
	// is cancelled, from its own goroutine) undoes all of it.
	Write(ctx context.Context, tx *sql.Tx, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error)
	// Close releases the Writer's prepared statements.
	Close() error
}

// A SavepointWriter is a Writer that writes a batch under a savepoint it
// takes and releases itself, sending those statements in the messages of
// its own where it can rather than as round trips of their own.
// WriteUnder(ctx, tx, name, …) does what Savepoint(tx, name), Write and,
// when Write succeeds, ReleaseSavepoint(tx, name) do; it may leave the
// savepoint taken instead of releasing it, where a savepoint replaces one
// of the same name (MariaDB), or until the next batch it writes in tx
// releases it in a message of its own statements (PostgreSQL), and the
// caller must then not roll back to name after a WriteUnder that
// succeeded. A *RowError
// leaves the savepoint taken, for the caller to roll back to; any other
// error leaves tx in no known state (its caller rolls it back).
type SavepointWriter interface {
	WriteUnder(ctx context.Context, tx *sql.Tx, name string, fileKey int64, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error)
}

// A Detacher is a Writer whose Close may wait for work of its own that
// no commit's durability waits for (SQLite's checkpoint of the log its
// commits wrote and synced, on a thread of the Writer's). Detach does
// what Close does but that wait, so that the Writer's connection is free
// at once, and returns the wait, which joins that work; it must be
// called before the database is closed.
type Detacher interface {
	Detach() (wait func())
}

// Check reports, in one error naming every problem, why table t cannot
// receive rows of schema for target tg. A nil error means it can.
func Check(t *Table, tg Target, schema *arrow.Schema) error {
	var probs []string
	inFile := map[string]bool{}
	for _, f := range schema.Fields() {
		inFile[f.Name] = true
		c := t.Column(f.Name)
		if c == nil {
			probs = append(probs, fmt.Sprintf("it has no column %q", f.Name))
			continue
		}
		if k := idemtype.TypeOf(f); !compatible(c.Kind, k) {
			why := ""
			if c.Kind == idemtype.Float64 && k == idemtype.Int64 {
				why = " (a float holds integers exactly only within ±2^53)"
			}
			probs = append(probs, fmt.Sprintf("column %q is %s, the file's is %s%s", f.Name, c.SQLType, k, why))
		}
	}
	if tg.Ordinal() {
		if !t.HasKey([]string{FileColumn, RowColumn}) {
			probs = append(probs, fmt.Sprintf("its primary key is not (%s, %s), so rows cannot be keyed by their place in the file; give --key, or import into a new table", FileColumn, RowColumn))
		}
	} else if !t.HasKey(tg.Key) {
		probs = append(probs, fmt.Sprintf("(%s) is not its primary key or a unique index", strings.Join(tg.Key, ", ")))
	}
	for _, c := range t.Columns {
		if !inFile[c.Name] && c.NotNull && !c.Default && !strings.HasPrefix(c.Name, Reserved) {
			probs = append(probs, fmt.Sprintf("column %q is NOT NULL without a default and the file does not have it", c.Name))
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("table %s does not fit the file: %s", t.Name, strings.Join(probs, "; "))
}

// compatible reports whether a column holding kind table can store every
// value of kind file without loss. A float64 column does not hold every
// int64 (only those within ±2^53); a decimal column holds every int64 and
// every float64 (as the shortest text that reads back as it).
func compatible(table, file idemtype.Type) bool {
	switch {
	case table == idemtype.Unknown || table == file:
		return true
	case table == idemtype.String:
		return true // text holds any value's text
	case table == idemtype.Decimal:
		return file == idemtype.Int64 || file == idemtype.Float64
	case table == idemtype.Date:
		// A date's text (a Parquet or Arrow date is read as its ISO
		// text) goes for the database to parse, as into any type
		// idemport does not create itself.
		return file == idemtype.String
	case table == idemtype.Timestamp || table == idemtype.LocalTimestamp:
		// A timestamp without a zone goes into a timestamptz column as
		// UTC, and a point in time into a timestamp column as its UTC
		// wall time, as idemport always stored them.
		return file == idemtype.Timestamp || file == idemtype.LocalTimestamp
	}
	return false
}

// RowSpan names a batch's rows in a message: "rows L-H", L and H the
// lowest and highest of their ordinals, or "row L" for one. A batch of a
// natural key's rows in key order (Database.KeyOrder) has them out of the
// file's order, so its first and last rows are not its bounds.
func RowSpan(ordinals []int64) string {
	if len(ordinals) == 0 {
		return "no rows"
	}
	lo, hi := slices.Min(ordinals), slices.Max(ordinals)
	if lo == hi {
		return "row " + strconv.FormatInt(lo, 10)
	}
	return "rows " + strconv.FormatInt(lo, 10) + "-" + strconv.FormatInt(hi, 10)
}

// FormatTimestamp renders microseconds since the Unix epoch as targets store
// timestamps in text: fixed width and UTC, so that text order is time order.
func FormatTimestamp(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}

// FormatLocalTimestamp renders a timestamp without a zone (microseconds
// since 1970-01-01T00:00:00 on the same wall clock) as targets store it
// in text: fixed width, no zone.
func FormatLocalTimestamp(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000")
}

// FormatDate renders days since 1970-01-01 as YYYY-MM-DD.
func FormatDate(days int32) string {
	return time.Unix(int64(days)*86400, 0).UTC().Format(time.DateOnly)
}

// AppendDate appends FormatDate(days) to b. A year of 0 through 9999 is
// written straight from the day count, without the time.Time and the
// string FormatDate makes (a writer renders every date of a batch: a
// column of dates took a tenth of the CPU time of an import of short
// rows); other years are FormatDate's.
func AppendDate(b []byte, days int32) []byte {
	year, month, day := Civil(int64(days))
	if year < 0 || year > 9999 {
		return append(b, FormatDate(days)...)
	}
	return append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10),
		'-', byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10))
}

// Civil returns the proleptic Gregorian date days days after 1970-01-01
// (Howard Hinnant's days_from_civil, inverted), for any int64 whose date's
// year fits an int64: the writers render dates and timestamps with it.
func Civil(days int64) (year, month, day int64) {
	z := days + 719_468
	era := z / 146_097
	if z < 0 && z%146_097 != 0 {
		era--
	}
	doe := z - era*146_097                                   // [0, 146096]
	yoe := (doe - doe/1460 + doe/36_524 - doe/146_096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)                 // [0, 365]
	mp := (5*doy + 2) / 153                                  // [0, 11], from March
	day = doy - (153*mp+2)/5 + 1
	month = mp + 3
	if month > 12 {
		month -= 12
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year, month, day
}

// Textual returns rec with its zone-less timestamp columns as their text
// (FormatLocalTimestamp), for a target that stores them as text; the
// caller releases it. It returns rec itself, retained, when it has none.
// Dates are left to the target's writer (SQLite's renders FormatDate's
// text as it writes each row).
func Textual(rec arrow.RecordBatch) arrow.RecordBatch {
	var cols []arrow.Array
	var fields []arrow.Field
	for i, c := range rec.Columns() {
		var text arrow.Array
		switch a := c.(type) {
		case *array.Timestamp:
			t := a.DataType().(*arrow.TimestampType)
			if t.TimeZone != "" {
				continue
			}
			b := array.NewStringBuilder(memory.DefaultAllocator)
			for j := 0; j < a.Len(); j++ {
				if a.IsNull(j) {
					b.AppendNull()
				} else {
					b.Append(FormatLocalTimestamp(a.Value(j).ToTime(t.Unit).UnixMicro()))
				}
			}
			text = b.NewArray()
			b.Release()
		default:
			continue
		}
		if cols == nil {
			cols = slices.Clone(rec.Columns())
			fields = slices.Clone(rec.Schema().Fields())
		}
		cols[i] = text
		defer cols[i].Release()
		fields[i] = arrow.Field{Name: fields[i].Name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	if cols == nil {
		rec.Retain()
		return rec
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// FormatFloat renders a float64 that goes into an exact column (decimal
// or text) as the shortest plain decimal that reads back as it: never an
// exponent (4.7631606274779e+11 is 476316062747.79) and no trailing zero
// (4, not 4.0). Into a decimal column (decimal true) zero has no sign, as
// numeric keeps it.
func FormatFloat(f float64, decimal bool) string {
	if decimal && f == 0 {
		return "0"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// FloatText returns rec with each float64 column i for which exact[i] is
// not Unknown as its text (FormatFloat, for a decimal column when exact[i]
// is Decimal), for a target that would otherwise store the float64 and
// print it its own way (SQLite's 4.0); the caller releases it. It returns
// rec itself, retained, when there is none. Only a float the file holds as
// one (Parquet, Arrow) comes here: a text file's number goes into such a
// column as the file wrote it.
func FloatText(rec arrow.RecordBatch, exact []idemtype.Type) arrow.RecordBatch {
	var cols []arrow.Array
	var fields []arrow.Field
	for i, c := range rec.Columns() {
		a, ok := c.(*array.Float64)
		if !ok || i >= len(exact) || exact[i] == idemtype.Unknown {
			continue
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		for j := 0; j < a.Len(); j++ {
			if a.IsNull(j) {
				b.AppendNull()
			} else {
				b.Append(FormatFloat(a.Value(j), exact[i] == idemtype.Decimal))
			}
		}
		if cols == nil {
			cols = slices.Clone(rec.Columns())
			fields = slices.Clone(rec.Schema().Fields())
		}
		cols[i] = b.NewArray()
		defer cols[i].Release()
		fields[i] = exact[i].Field(fields[i].Name)
		b.Release()
	}
	if cols == nil {
		rec.Retain()
		return rec
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// Limits are a database's limits on the tables idemport creates and
// writes: a file that exceeds them is refused before anything is written,
// rather than failing the same way at every rerun.
type Limits struct {
	// MaxColumns bounds the columns of a table, and Reserved is how many
	// of them idemport needs besides the file's: its lineage columns, and
	// any its writer adds (SQLite's batch table has one more).
	MaxColumns int
	Reserved   int
	// MaxNameBytes bounds an identifier's length in bytes (each part of a
	// qualified table name); 0 means no limit.
	MaxNameBytes int
	// QualifiedNames says a dotted table name is schema.table, read by
	// SplitTable, and NameQuotes are the characters that may quote a
	// part of it.
	QualifiedNames bool
	NameQuotes     string
	// FoldsCase says names that differ only in ASCII case are one name.
	FoldsCase bool
	// JSONB says json columns are created as PostgreSQL jsonb.
	JSONB bool
	// KeyBytes bounds the index of a natural key in bytes (InnoDB's
	// 3,072), and CharBytes is what the index reserves for a character of
	// text (4 in utf8mb4); 0 means no limit. Each column of a key of n
	// columns in a table the driver creates holds KeyChars(n) characters
	// of text, its even share whatever the kinds of the others, so that
	// the plan pass, which checks a key's text before it has inferred the
	// column's kind, refuses exactly the values the table would. (InnoDB
	// keys have at most 32 columns, so a share is at least 24 characters,
	// more than an integer's text.)
	KeyBytes  int
	CharBytes int
	// HeldBytes bounds the bytes of a file worth writing in a transaction
	// held open while the import waits for something else before it may
	// commit (the partitions pipeline writes while the plan pass runs): on
	// SQLite 24 MiB, since that transaction's pages stay in the log, which
	// no checkpoint copies until it commits, and past 64 MiB (16,384
	// frames) its COMMIT checkpoints the whole log itself. 0 means the
	// database sets no bound: holding a large transaction costs it nothing
	// more than committing it (PostgreSQL).
	HeldBytes int64
	// DDLCommits says that every DDL statement (CREATE, ALTER, DROP)
	// commits the transaction it runs in and runs outside any (MariaDB,
	// MySQL): the pipeline then runs each DDL step of an import in a step
	// of its own, recorded in the ledger, before the transaction whose
	// rows need it (Ledger.RecordCreated), instead of inside it.
	DDLCommits bool
	// FixedKeys says the type of a column of a key (the primary key or a
	// unique index) cannot be widened (MariaDB, MySQL: Driver.Widen
	// refuses it), so that --evolve widen refuses a file that needs one
	// widened in its plan, before any effect, rather than failing the same
	// way at every attempt. The zero value, widened like any column, is
	// SQLite's and PostgreSQL's.
	FixedKeys bool
	// Rules are what the database's decimal and JSON types hold, which
	// the plan pass checks values of Column.Numeric and Column.JSONB
	// columns (and with JSONB, every JSON value of a table it creates)
	// against. The zero Rules check nothing.
	Rules idemtype.ValueRules
}

// KeyChars returns how many characters of text each column of a key of n
// columns may hold in a table the driver creates (KeyBytes), or 0 when
// there is no limit.
func (l Limits) KeyChars(n int) int {
	if l.KeyBytes <= 0 || l.CharBytes <= 0 || n <= 0 {
		return 0
	}
	return l.KeyBytes / l.CharBytes / n
}

// CheckTable reports a table name the database cannot hold as it is
// written (it would be cut short, and names alike at their start would
// share one table), or one SplitTable refuses.
func (l Limits) CheckTable(table string) error {
	if l.MaxNameBytes == 0 {
		return nil
	}
	schema, name, err := l.SplitTable(table)
	if err != nil {
		return err
	}
	for _, p := range []string{schema, name} {
		if len(p) > l.MaxNameBytes {
			return fmt.Errorf("table name %q is %d bytes, over the database's limit of %d bytes for a name; give a shorter one with --table", p, len(p), l.MaxNameBytes)
		}
	}
	return nil
}

// CheckColumns reports the first limit the file's columns exceed in a
// table of target tg: too many columns, a name too long, or two names that
// the database takes for one.
func (l Limits) CheckColumns(tg Target, schema *arrow.Schema) error {
	fields := schema.Fields()
	if most := l.MaxColumns - l.Reserved; l.MaxColumns > 0 && len(fields) > most {
		return fmt.Errorf("the file has %d columns, more than the %d it may have (column %q and those after it are too many): the database allows %d columns per table, of which idemport needs %d (its lineage columns %s and %s, and its writer's own); split the file's columns over two tables",
			len(fields), most, fields[most].Name, l.MaxColumns, l.Reserved, FileColumn, RowColumn)
	}
	seen := map[string]string{}
	if l.FoldsCase {
		seen[foldASCII(FileColumn)], seen[foldASCII(RowColumn)] = FileColumn, RowColumn
	}
	for _, f := range fields {
		if l.MaxNameBytes > 0 && len(f.Name) > l.MaxNameBytes {
			return fmt.Errorf("column %q: its name is %d bytes, over the database's limit of %d bytes for a name; rename it in the file", f.Name, len(f.Name), l.MaxNameBytes)
		}
		if !l.FoldsCase {
			continue
		}
		k := foldASCII(f.Name)
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("column %q: the database does not tell names apart by case, so it is the same column as %q; rename one of them in the file", f.Name, prev)
		}
		seen[k] = f.Name
	}
	return nil
}

// foldASCII lowercases the ASCII letters of s, as SQLite compares names.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Reason codes of rows a write refused, as stored with their rejects.
const (
	CodeConstraint = "constraint" // a constraint, a trigger or a foreign key refused the row
	CodeRefused    = "refused"    // the database refused the row's values
)

// RowError is a write that failed because of the values of its rows (a
// unique or CHECK constraint, a foreign key, a trigger, a value the column
// cannot hold), not because of the database or the connection. Writing
// fewer of the rows may succeed: the caller can isolate the rows at fault.
type RowError struct {
	Code   string // CodeConstraint or CodeRefused
	Column string // the column at fault, when the database says
	Reason string // the database's reason, for the reject
	Err    error
}

func (e *RowError) Error() string { return e.Err.Error() }
func (e *RowError) Unwrap() error { return e.Err }

// Widen returns the kind a column holding kind table is widened to so that
// it takes values of kind file, along int64 → decimal → text and float64 →
// text; ok is false when the column already takes them, or cannot widen.
func Widen(table, file idemtype.Type) (kind idemtype.Type, ok bool) {
	if compatible(table, file) {
		return idemtype.Unknown, false
	}
	switch table {
	case idemtype.Int64:
		if file == idemtype.Decimal || file == idemtype.Float64 {
			return idemtype.Decimal, true
		}
		return idemtype.String, true
	case idemtype.Decimal, idemtype.Float64:
		return idemtype.String, true
	}
	return idemtype.Unknown, false
}
