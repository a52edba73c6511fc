package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// Driver is the PostgreSQL driver. Idemport's own tables live in a schema
// of their own (Settings.StateSchema), created by Open. Its Writer needs
// connections of the pgx database/sql driver (github.com/jackc/pgx/v5/stdlib,
// driver name "pgx"), as Open makes.
type Driver struct {
	// The operations written once in sink/internal/stdsql (the
	// ledger's, the checkpoints', savepoints, the merge, the sweep,
	// verify's reads), in this driver's spelling.
	stdsql.Operations[Driver]
}

var (
	_ sink.Driver = Driver{}
	_ sink.Denier = Driver{}
)

//go:embed migrations
var migrations embed.FS

// Claims implements sink.Driver: postgres://…, postgresql://… or a libpq
// key=value string (host=… dbname=…); what it leaves out is filled from
// the PG* environment variables, as psql does.
func (Driver) Claims(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || keyValue(dsn)
}

// Forms implements sink.Driver.
func (Driver) Forms() string { return "postgres://… or host=… dbname=…" }

// libpqKeys are the connection parameters that start a libpq key=value
// string.
var libpqKeys = []string{"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "service",
	"application_name", "connect_timeout", "options", "target_session_attrs", "sslrootcert", "sslcert", "sslkey"}

// keyValue reports whether dsn is a libpq key=value string: its first
// word is KEY=… with KEY a connection parameter.
func keyValue(dsn string) bool {
	word, _, _ := strings.Cut(strings.TrimSpace(dsn), " ")
	key, _, ok := strings.Cut(word, "=")
	return ok && slices.Contains(libpqKeys, strings.TrimSpace(key))
}

// Redact implements sink.Driver: a URL's password and query values, and
// a key=value string's passwords, masked.
func (Driver) Redact(dsn string) string {
	if !keyValue(dsn) {
		return sink.RedactURL(dsn)
	}
	return redactKV(dsn)
}

// name names a database for messages: host, port, database and user as
// the driver resolved them (PG* variables included), never the password.
func (d Driver) name(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return d.Redact(dsn)
	}
	return fmt.Sprintf("PostgreSQL database %q on %s:%d as %s", cfg.Database, cfg.Host, cfg.Port, cfg.User)
}

// Open implements sink.Driver: it connects, and unless s.ReadOnly creates
// the schema s.StateSchema that holds idemport's tables. Every connection
// has TCP keepalives and a user timeout, and waits for locks at most
// s.BusyTimeout (lock_timeout): see setUp. A read-only Open's sessions
// have default_transaction_read_only on. A batch handed
// to the Writer is one COPY and one merge: a batch per partition makes one
// of each per partition.
func (d Driver) Open(ctx context.Context, dsn string, s sink.Settings) (*sink.Database, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, d.parseError(dsn, err)
	}
	configure(cfg)
	if s.ReadOnly {
		// Every transaction, implicit ones included, is read-only: a
		// command that only reads writes nothing, and works for a user who
		// may only read.
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(ctx context.Context, c *pgx.Conn) error { return setUp(ctx, c, s) }))
	// KeyOrder: a natural key's rows in random order land each on a
	// random page of the key's index; in key order, one page after
	// another (see the writer's tryDirect for a batch of increasing keys).
	out := &sink.Database{DB: db, Name: d.name(dsn), Prefix: q(s.StateSchema) + ".", BatchRows: 0, KeyOrder: true}
	out.Disk = "the server's disk (" + out.Name + ")"
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, scrub(connectError(out.Name, cfg, err), secretParts(dsn))
	}
	if !s.ReadOnly {
		if err := createSchema(ctx, db, s.StateSchema); err != nil {
			err = schemaError(ctx, db, out.Name, s.StateSchema, cfg, err)
			db.Close()
			return nil, scrub(err, secretParts(dsn))
		}
	}
	return out, nil
}

// createSchema creates the schema named schema when it does not exist, so
// that migrations can place tables in it. Concurrent callers are safe: a
// caller that loses the race to create the schema finds it created. It
// runs outside a transaction: a lost race would abort the transaction.
func createSchema(ctx context.Context, db *sql.DB, schema string) error {
	_, err := db.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+q(schema))
	if err == nil {
		return nil
	}
	// Two sessions that both found the schema missing both try to create
	// it, and the loser fails on the catalog's unique index.
	var ok bool
	if qerr := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); qerr == nil && ok {
		return nil
	}
	return err
}

// Migrations implements sink.Driver.
func (Driver) Migrations(component string) (fs.FS, error) {
	return fs.Sub(migrations, "migrations/"+component)
}

// ApplyTogether creates the versions table table unless it exists,
// applies the migrations bodies (bodies[i] the text of version versions[i]
// of components[i]) in order, and records each in table, all in one
// multi-statement query: one message and one round trip, which the server
// runs as one transaction (an implicit one, rolled back whole by the
// first statement that fails), where a fresh ledger and its checkpoints
// took twelve round trips and two commits (under a loaded CPU, each round
// trip waits for the server's process to be scheduled). All or nothing: a
// concurrent caller's tables or version rows make it fail, and
// internal/migrate then applies what is missing one at a time.
//
// Its commit does not wait for the log's flush (SET LOCAL in the same
// message): the log is one sequence, flushed in order, so the first later
// commit that waits (the claim that creates the operation, the plan's,
// any completion) makes the migrations durable before anything outside
// the database acts on the tables; a server crash before that takes them
// away with their version rows, together (one transaction), and the state
// schema is as it was before: the next run finds them missing and applies
// them again.
func (Driver) ApplyTogether(ctx context.Context, db *sql.DB, table string, components []string, versions []int, bodies []string, at time.Time) error {
	var b strings.Builder
	b.WriteString("SET LOCAL synchronous_commit = off;\n")
	b.WriteString(stdsql.CreateVersionsSQL(table))
	b.WriteString(";\n")
	for _, body := range bodies {
		b.WriteString(body)
		b.WriteString("\n;\n")
	}
	b.WriteString(stdsql.RecordVersionsSQL(table, components, versions, at, literal))
	// Without arguments pgx sends the text as a simple query, which may
	// hold many statements and runs them as one transaction.
	_, err := db.ExecContext(ctx, b.String())
	return err
}

// literal quotes s as an SQL string literal that means s whatever the
// session's standard_conforming_strings (a server's, a role's or a
// database's setting): an escape string, E'…', in which a backslash
// escapes under either setting, with its backslashes and quotes doubled.
// A plain '…' would take s's backslashes as escapes where the setting is
// off, changing the value or ending the literal early.
func literal(s string) string {
	return `E'` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `''`) + `'`
}

// Rebind implements sink.Driver: ? becomes $1, $2, ….
func (Driver) Rebind(query string) string { return Rebind(query) }

// Rebind rewrites the ? placeholders of query as $1, $2, …. Question
// marks inside quoted strings or names are left alone.
func Rebind(query string) string {
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Now implements sink.Driver.
func (Driver) Now() string {
	return "(floor(extract(epoch from clock_timestamp()) * 1000))::bigint"
}

// Quote implements sink.Driver.
func (Driver) Quote(name string) string { return q(name) }

// QuoteTable implements sink.Driver: "sales.orders" names table orders in
// schema sales.
func (Driver) QuoteTable(name string) string { return quoteTable(name) }

// q quotes one name, dots included.
func q(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// nameQuotes quote a part of a table name: "a.b" is one name.
const nameQuotes = `"`

// splitTable is how every statement reads a table name: its schema (""
// when unqualified) and table, unquoted (sink.SplitTable).
func splitTable(name string) (schema, table string, err error) {
	return sink.SplitTable(name, nameQuotes)
}

// quoteTable quotes a table name part by part, as splitTable reads it. A
// name it refuses, which the import refused before any statement, is
// quoted whole, naming no other table.
func quoteTable(name string) string {
	schema, table, err := splitTable(name)
	switch {
	case err != nil:
		return q(name)
	case schema == "":
		return q(table)
	}
	return q(schema) + "." + q(table)
}

// quoteList quotes each name, prefixed (e.g. "excluded."), and joins them
// with commas.
func quoteList(names []string, prefix string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + q(n)
	}
	return strings.Join(out, ", ")
}

// Distinct implements sink.Driver.
func (Driver) Distinct(a, b []string) string {
	if len(a) == 1 {
		return "(" + a[0] + ") IS DISTINCT FROM (" + b[0] + ")"
	}
	return "ROW(" + strings.Join(a, ", ") + ") IS DISTINCT FROM ROW(" + strings.Join(b, ", ") + ")"
}

// KeyValue implements sink.Driver: numeric compares by value already (1.5
// = 1.50), and so does its unique index.
func (Driver) KeyValue(expr string, _ idemtype.Type) string { return expr }

// Exact implements sink.Driver: numeric's equality ignores the scale its
// text keeps, and a type idemport does not know may have looser equality
// than its text (as the Writer compares them): both compare as text. json
// has no equality operator at all: it compares as jsonb (a no-op for a
// jsonb column).
func (Driver) Exact(expr string, kind idemtype.Type) string {
	switch kind {
	case idemtype.Decimal, idemtype.Unknown:
		return "(" + expr + ")::text"
	case idemtype.JSON:
		return "(" + expr + ")::jsonb"
	}
	return expr
}

// ExactColumn implements stdsql.ColumnExacter as the Writer compares a
// stored value with a new one (field.comparable): a json column keeps a
// document's text, which is what it compares by (other key order or
// spacing is a change, as the plain import counts it, and a stored
// document jsonb cannot read is no error); any other column as Exact.
func (d Driver) ExactColumn(expr string, c *sink.Column) string {
	if c.TypeName == "json" {
		return "(" + expr + ")::text"
	}
	return d.Exact(expr, c.Kind)
}

// TimeType implements sink.Driver.
func (Driver) TimeType() string { return "timestamptz" }

// TimeValue implements sink.Driver.
func (Driver) TimeValue(t time.Time) any { return t.UTC() }

// KeyParam implements sink.Driver: the value goes as text cast to the
// column's type, so that the comparison is the column's whatever type the
// file's values have.
func (Driver) KeyParam(sqlType string) string {
	if sqlType == "" {
		return "?"
	}
	return "CAST(? AS " + sqlType + ")"
}

// KeyArg implements sink.Driver: the value's text.
func (Driver) KeyArg(v any) any {
	if v == nil {
		return nil
	}
	return fmt.Sprint(v)
}

// TableExists implements sink.Driver.
func (Driver) TableExists(ctx context.Context, qr sink.Querier, name string) (bool, error) {
	var ok bool
	err := qr.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok)
	return ok, err
}

// Tables implements sink.Driver: in every schema.
func (d Driver) Tables(ctx context.Context, qr sink.Querier, prefixes ...string) ([]string, error) {
	var like []string
	var args []any
	for i, p := range prefixes {
		like = append(like, fmt.Sprintf(`tablename LIKE $%d`, i+1))
		args = append(args, strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p)+"%")
	}
	rows, err := qr.QueryContext(ctx, `SELECT schemaname, tablename FROM pg_tables WHERE `+strings.Join(like, " OR "), args...)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	return stdsql.TableNames(rows, d.Limits())
}

// CurrentSchema implements sink.Driver: the first schema of the search
// path that exists.
func (Driver) CurrentSchema(ctx context.Context, qr sink.Querier) (string, error) {
	var s string
	if err := qr.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&s); err != nil {
		return "", fmt.Errorf("read the current schema: %w", err)
	}
	return s, nil
}

// Lock implements sink.Driver with a transaction-level advisory lock on
// the key.
func (Driver) Lock(ctx context.Context, tx *sql.Tx, key string) error {
	_, err := tx.ExecContext(ctx, lockSQL, key)
	return err
}

// LockTable implements sink.Driver. An advisory lock is the whole
// database's, and an unqualified name means a table of the first schema
// of the session's search path that has it, or, where none has, of the
// schema it would be created in (current_schema()): the key names that
// schema, so that imports into tables of one name in different schemas
// do not wait for each other.
func (d Driver) LockTable(ctx context.Context, tx *sql.Tx, what, table string) error {
	query, args := lockTableSQL(what, table)
	anys := make([]any, len(args))
	for i, a := range args {
		anys[i] = a
	}
	_, err := tx.ExecContext(ctx, query, anys...)
	return err
}

// lockTableSQL is LockTable's statement and its arguments, the name read
// as splitTable reads it: a qualified name's lock is Lock's of what and
// schema.table. A name splitTable refuses, which the import refused
// before any statement, is locked as given, naming no other table.
func lockTableSQL(what, table string) (string, []string) {
	schema, name, err := splitTable(table)
	switch {
	case err != nil:
		return lockSQL, []string{what + " " + table}
	case schema != "":
		return lockSQL, []string{what + " " + schema + "." + name}
	}
	return `SELECT pg_advisory_xact_lock(hashtextextended($1 || coalesce(
		(SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($2)), current_schema(), '') || '.' || $3, 0))`,
		[]string{what + " ", quoteTable(table), name}
}

// lockSQL is Lock's statement, the key its argument.
const lockSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

// SkipLocked implements sink.Driver.
func (Driver) SkipLocked(of string) (string, bool) {
	if of != "" {
		return " FOR UPDATE OF " + of + " SKIP LOCKED", true
	}
	return " FOR UPDATE SKIP LOCKED", true
}

// Limits implements sink.Driver: 1600 columns per table, of which the
// lineage columns take 2 (and the staging table's round and ordinal as
// many), names of at most 63 bytes (NAMEDATALEN - 1), quoted names that
// keep their case, and json as jsonb.
func (Driver) Limits() sink.Limits {
	return sink.Limits{MaxColumns: 1600, Reserved: 2, MaxNameBytes: 63, QualifiedNames: true, NameQuotes: nameQuotes, JSONB: true, Rules: valueRules}
}
