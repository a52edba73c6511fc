package drivertest

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// Env is an empty database for one case, and the few things about its
// database that the suite cannot say in portable SQL.
type Env struct {
	DB     *sql.DB
	Driver sink.Driver
	// AutoKey is the definition of an integer primary key column that the
	// database fills in when a row gives no value, without the column
	// name: "INTEGER PRIMARY KEY" on SQLite.
	AutoKey string
	// CountUpdates installs on table a counter of its updated rows, using
	// conn, and returns a function that reads it.
	CountUpdates func(t *testing.T, conn *sql.Conn, table string) func() int64
	// NoPartialIndexes says the database has no partial indexes (CREATE
	// INDEX … WHERE: MariaDB and MySQL), so the cases that make one to
	// check that it is not taken for a key leave that part out.
	NoPartialIndexes bool
}

// RunTarget runs the target tables' conformance cases (Ensure, Describe,
// the Writer, evolution, the target operations), each on a fresh Env from
// open, in parallel.
func RunTarget(t *testing.T, open func(t *testing.T) Env) {
	cases := []struct {
		name string
		fn   func(t *testing.T, f *Fx)
	}{
		{"OrdinalTableKeyedByLineage", ordinalTableKeyedByLineage},
		{"SavepointUndoesAWrite", savepointUndoesAWrite},
		{"DropTableIfExists", dropTableIfExists},
		{"TablesByPrefix", tablesByPrefix},
		{"VerifyReads", verifyReads},
		{"CompareFindsKeysAndValues", compareFindsKeysAndValues},
		{"OrdinalInsertUnchangedUpdated", ordinalInsertUnchangedUpdated},
		{"OrdinalGaps", ordinalGaps},
		{"OrdinalFileKeysDoNotCollide", ordinalFileKeysDoNotCollide},
		{"OrdinalLargeBatch", ordinalLargeBatch},
		{"SeveralWritesInOneTransaction", severalWritesInOneTransaction},
		{"RolledBackWriteLeavesNothing", rolledBackWriteLeavesNothing},
		{"WriteOutsideItsTransactionWritesNothing", writeOutsideItsTransactionWritesNothing},
		{"NaturalKeyKeepsLineageOfUnchangedRows", naturalKeyKeepsLineageOfUnchangedRows},
		{"NaturalKeyDuplicatesInOneBatch", naturalKeyDuplicatesInOneBatch},
		{"NaturalKeyManyDuplicates", naturalKeyManyDuplicates},
		{"NaturalCompositeKey", naturalCompositeKey},
		{"NaturalKeyDeltaExact", naturalKeyDeltaExact},
		{"VersionGuard", versionGuard},
		{"TimestampVersionGuard", timestampVersionGuard},
		{"SameFileOrderGuard", sameFileOrderGuard},
		{"SameFileOrderGuardWithEqualVersions", sameFileOrderGuardWithEqualVersions},
		{"VersionOrderDoesNotDependOnCommitOrder", versionOrderDoesNotDependOnCommitOrder},
		{"WriteBalancedMixed", writeBalancedMixed},
		{"ExistingTableWithNaturalKey", existingTableWithNaturalKey},
		{"ExistingTableWithVersionAndNoLineage", existingTableWithVersionAndNoLineage},
		{"ExistingTableWithoutLineageKeyRejectedInOrdinalMode", existingTableRejectedInOrdinalMode},
		{"ExistingTableWiderTypes", existingTableWiderTypes},
		{"ExistingFloatRefusesInt64", existingFloatRefusesInt64},
		{"DecimalsExact", decimalsExact},
		{"DecimalKeysByValue", decimalKeysByValue},
		{"KeyWidensAsLimitsSay", keyWidensAsLimitsSay},
		{"CheckReportsEveryProblem", checkReportsEveryProblem},
		{"UniqueIndexKey", uniqueIndexKey},
		{"DescribeMissingTable", describeMissingTable},
		{"StoredValues", storedValues},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, Open(t, open(t)))
		})
	}
}

// ---- fixture -------------------------------------------------------------

// Fx is one Env and one connection to it, used for every write. Driver
// tests use it for their own cases too.
type Fx struct {
	T    *testing.T
	Ctx  context.Context
	Env  Env
	Conn *sql.Conn
}

// Open returns a fixture on env; its connection is closed when t ends.
func Open(t *testing.T, env Env) *Fx {
	t.Helper()
	ctx := context.Background()
	conn, err := env.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Fx{T: t, Ctx: ctx, Env: env, Conn: conn}
}

// Exec runs a statement, with ? placeholders, on the fixture's connection.
func (f *Fx) Exec(query string, args ...any) {
	f.T.Helper()
	if _, err := f.Conn.ExecContext(f.Ctx, f.Env.Driver.Rebind(query), args...); err != nil {
		f.T.Fatalf("%s: %v", query, err)
	}
}

// Int returns the integer query selects.
func (f *Fx) Int(query string, args ...any) int64 {
	f.T.Helper()
	var n int64
	if err := f.Conn.QueryRowContext(f.Ctx, f.Env.Driver.Rebind(query), args...).Scan(&n); err != nil {
		f.T.Fatalf("%s: %v", query, err)
	}
	return n
}

// Ensure runs Ensure in its own transaction, committed on success.
func (f *Fx) Ensure(tg sink.Target, schema *arrow.Schema) error {
	f.T.Helper()
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		f.T.Fatal(err)
	}
	if err := f.Env.Driver.Ensure(f.Ctx, tx, tg, schema); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		f.T.Fatal(err)
	}
	return nil
}

// MustEnsure is Ensure failing the test on error.
func (f *Fx) MustEnsure(tg sink.Target, schema *arrow.Schema) {
	f.T.Helper()
	if err := f.Ensure(tg, schema); err != nil {
		f.T.Fatalf("ensure %s: %v", tg.Table, err)
	}
}

// Writer returns a Writer on the fixture's connection, closed when the
// test ends.
func (f *Fx) Writer(tg sink.Target, schema *arrow.Schema) sink.Writer {
	f.T.Helper()
	w, err := f.Env.Driver.Writer(f.Ctx, f.Conn, tg, schema)
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(func() {
		if err := w.Close(); err != nil {
			f.T.Errorf("close writer: %v", err)
		}
	})
	return w
}

// Write runs one Write in its own committed transaction and checks that its
// counts account for every row exactly once.
func (f *Fx) Write(w sink.Writer, fileKey int64, rec arrow.RecordBatch, ordinals []int64) idemtype.Rows {
	f.T.Helper()
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		f.T.Fatal(err)
	}
	c := f.WriteIn(tx, w, fileKey, rec, ordinals)
	if err := tx.Commit(); err != nil {
		f.T.Fatal(err)
	}
	return c
}

// WriteIn runs one Write inside tx and checks its counts balance.
func (f *Fx) WriteIn(tx *sql.Tx, w sink.Writer, fileKey int64, rec arrow.RecordBatch, ordinals []int64) idemtype.Rows {
	f.T.Helper()
	c, err := w.Write(f.Ctx, tx, fileKey, rec, ordinals)
	if err != nil {
		tx.Rollback()
		f.T.Fatalf("write: %v", err)
	}
	if c.Read != rec.NumRows() || c.Rejected != 0 {
		f.T.Errorf("write of %d rows read %d, rejected %d", rec.NumRows(), c.Read, c.Rejected)
	}
	if !c.Balanced() || c.Read != c.Inserted+c.Updated+c.Unchanged+c.Stale {
		f.T.Errorf("write counts do not balance: %+v", c)
	}
	return c
}

// Table returns the rows of table ordered by order, each as cols joined by
// "|" and rendered by the kind the driver's Describe gives each column:
// NULL, integers, floats with a decimal point, 'strings', booleans as
// true and false, timestamps as sink.FormatTimestamp does, JSON compacted
// with sorted keys. A column given as "name:kind" is rendered as kind
// whatever Describe says (a driver may store JSON in a text column).
func (f *Fx) Table(name, order string, cols ...string) []string {
	f.T.Helper()
	desc, err := f.Env.Driver.Describe(f.Ctx, f.Conn, name)
	if err != nil || desc == nil {
		f.T.Fatalf("describe %s: %v, %v", name, desc, err)
	}
	kinds := make([]idemtype.Type, len(cols))
	quoted := make([]string, len(cols))
	for i, c := range cols {
		c, kind, forced := strings.Cut(c, ":")
		col := desc.Column(c)
		if col == nil {
			f.T.Fatalf("%s has no column %s", name, c)
		}
		kinds[i] = col.Kind
		if forced {
			kinds[i] = mustType(f.T, kind)
		}
		quoted[i] = f.Env.Driver.Quote(c)
	}
	query := "SELECT " + strings.Join(quoted, ", ") + " FROM " + f.Env.Driver.QuoteTable(name) + " ORDER BY " + order
	rows, err := f.Conn.QueryContext(f.Ctx, query)
	if err != nil {
		f.T.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			f.T.Fatal(err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			parts[i] = render(f.T, kinds[i], v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		f.T.Fatal(err)
	}
	return out
}

// Columns returns the names of table's columns, in order.
func (f *Fx) Columns(table string) []string {
	f.T.Helper()
	desc, err := f.Env.Driver.Describe(f.Ctx, f.Conn, table)
	if err != nil || desc == nil {
		f.T.Fatalf("describe %s: %v, %v", table, desc, err)
	}
	var out []string
	for _, c := range desc.Columns {
		out = append(out, c.Name)
	}
	return out
}

// render renders a value read back from a column of kind.
func render(t *testing.T, kind idemtype.Type, v any) string {
	t.Helper()
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	if v == nil {
		return "NULL"
	}
	switch kind {
	case idemtype.Bool:
		switch v := v.(type) {
		case bool:
			return strconv.FormatBool(v)
		case int64:
			return strconv.FormatBool(v != 0)
		}
	case idemtype.Int64:
		if v, ok := v.(int64); ok {
			return strconv.FormatInt(v, 10)
		}
	case idemtype.Float64:
		var x float64
		switch v := v.(type) {
		case float64:
			x = v
		case int64:
			x = float64(v)
		case string:
			var err error
			if x, err = strconv.ParseFloat(v, 64); err != nil {
				t.Fatalf("float column holds %q", v)
			}
		default:
			t.Fatalf("float column holds %T %v", v, v)
		}
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if x == math.Trunc(x) && !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	case idemtype.Timestamp:
		switch v := v.(type) {
		case time.Time:
			return sink.FormatTimestamp(v.UnixMicro())
		case string:
			return v
		}
	case idemtype.JSON:
		if s, ok := v.(string); ok {
			var x any
			if err := json.Unmarshal([]byte(s), &x); err != nil {
				t.Fatalf("json column holds %q: %v", s, err)
			}
			b, _ := json.Marshal(x)
			return string(b)
		}
	case idemtype.String:
		if s, ok := v.(string); ok {
			return "'" + s + "'"
		}
	case idemtype.Decimal:
		if s, ok := v.(string); ok {
			return s // the exact text: numeric's, or SQLite's DECIMAL TEXT
		}
	}
	t.Fatalf("a %s column holds %T %v", kind, v, v)
	return ""
}

// WantRows fails t unless got equals want.
func WantRows(t *testing.T, what string, got, want idemtype.Rows) {
	t.Helper()
	if got != want {
		t.Errorf("%s: counted %+v, want %+v", what, got, want)
	}
}

// WantTable fails t unless got equals want.
func WantTable(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: table holds\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// ---- Arrow batches -------------------------------------------------------

var tsType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// I64 is an int64 field.
func I64(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
}

// F64 is a float64 field.
func F64(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
}

// Str is a string field.
func Str(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
}

// Bool is a bool field.
func Bool(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.FixedWidthTypes.Boolean, Nullable: true}
}

// TS is a timestamp field (microseconds, UTC).
func TS(name string) arrow.Field {
	return arrow.Field{Name: name, Type: tsType, Nullable: true}
}

// JSON is a json field: a string field marked by its metadata.
func JSON(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true,
		Metadata: arrow.NewMetadata([]string{idemtype.MetadataType}, []string{"json"})}
}

// Dec is a decimal field: exact decimal text, as the reader makes it.
func Dec(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true,
		Metadata: arrow.NewMetadata([]string{idemtype.MetadataType}, []string{"decimal"})}
}

// Schema is an Arrow schema of fields.
func Schema(fields ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fields, nil) }

// Batch builds a record batch of schema from rows of Go values: nil is
// null, int goes to int64 columns (BIGINT's edges too), time.Time to
// timestamp columns, with a zone or without. It is released when t ends.
func Batch(t *testing.T, schema *arrow.Schema, rows ...[]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for r, row := range rows {
		if len(row) != len(schema.Fields()) {
			t.Fatalf("row %d has %d values for %d columns", r, len(row), len(schema.Fields()))
		}
		for i, v := range row {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(int64(v.(int)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v.(time.Time).UnixMicro()))
			default:
				t.Fatalf("no builder for %T", fb)
			}
		}
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

// Ords returns its arguments: the ordinals of a batch's rows.
func Ords(o ...int64) []int64 { return o }

// Seq returns the ordinals from..to.
func Seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func lineageCols(cols ...string) []string {
	return append(cols, sink.FileColumn, sink.RowColumn)
}

var (
	people    = Schema(I64("id"), Str("name"), F64("score"))
	named     = Schema(I64("id"), Str("name"))
	versioned = Schema(I64("id"), I64("v"), Str("name"))
)

var lineageOrder = `"` + sink.FileColumn + `", "` + sink.RowColumn + `"`

// mustType parses a type name a test wrote.
func mustType(t testing.TB, name string) idemtype.Type {
	t.Helper()
	typ, err := idemtype.ParseType(name)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}
