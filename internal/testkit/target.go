package testkit

import (
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/mysql"
	"github.com/idemport/idemport/sink/postgres"
	"github.com/idemport/idemport/sink/sqlite"
)

// The names of the targets the end-to-end tests run against, used as the
// names of their subtests.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// TargetNames returns the names of every target, SQLite first.
func TargetNames() []string { return []string{SQLite, Postgres} }

// Target is a fresh, empty target database for one test: a SQLite file in
// the test's directory, a schema of its own on the PostgreSQL test
// server, or a database of its own on the MariaDB test server, which holds
// both the target tables and idemport's ledger.
type Target struct {
	// Name is SQLite, Postgres or MariaDB.
	Name string
	// Args are the flags that point the binary at the target: --into, and
	// --state-schema on PostgreSQL. Pass them after the subcommand.
	Args []string
	// DB queries the target. Unqualified table names resolve to the
	// target's tables: on PostgreSQL its schema is first on the search
	// path. On SQLite it keeps no idle connection, so that the binary's
	// last connection checkpoints the WAL when it closes. Closed at cleanup.
	DB *sql.DB
	// Schema is the PostgreSQL schema of the target and the ledger; empty
	// on SQLite.
	Schema string
	// Path is the SQLite file; empty on PostgreSQL.
	Path string
}

// Each runs f as one subtest per target, named after it. The PostgreSQL
// subtest skips (or fails) as internal/pgtest says when no server is
// configured.
func Each(t *testing.T, f func(t *testing.T, name string)) {
	t.Helper()
	for _, name := range TargetNames() {
		t.Run(name, func(t *testing.T) {
			Available(t, name)
			f(t, name)
		})
	}
}

// Available skips t (or fails it, see internal/pgtest and
// internal/testenv) when the target named name cannot be had here.
func Available(t testing.TB, name string) {
	t.Helper()
	switch name {
	case Postgres:
		pgtest.DSN(t)
	case MariaDB:
		mariaDSN(t)
	}
}

// NewTarget returns a fresh target of the kind named: on SQLite the file
// idemport.db in dir; on PostgreSQL a new schema, dropped with everything
// in it when t ends.
func NewTarget(t testing.TB, name, dir string) *Target {
	t.Helper()
	switch name {
	case SQLite:
		path := filepath.Join(dir, "idemport.db")
		db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxIdleConns(0)
		t.Cleanup(func() { db.Close() })
		return &Target{Name: SQLite, Args: []string{"--into", path}, DB: db, Path: path}
	case Postgres:
		db, schema := pgtest.Open(t)
		return &Target{Name: Postgres, Args: []string{"--into", pgtest.URL(t, schema), "--state-schema", schema}, DB: db, Schema: schema}
	case MariaDB:
		dsn, db := newMariaDB(t)
		return &Target{Name: MariaDB, Args: []string{"--into", dsn}, DB: db}
	}
	t.Fatalf("unknown target %q", name)
	return nil
}

// IsPostgres reports whether the target is PostgreSQL.
func (tg *Target) IsPostgres() bool { return tg.Name == Postgres }

// IsMariaDB reports whether the target is MariaDB.
func (tg *Target) IsMariaDB() bool { return tg.Name == MariaDB }

// Ledger returns the SQL name of one of idemport's own tables, given its
// bare name (operations, attempts, partitions, …): idemport_operations on
// SQLite, "<schema>".operations on PostgreSQL.
func (tg *Target) Ledger(name string) string {
	if tg.IsPostgres() {
		return QuoteOne(tg.Schema) + "." + name
	}
	return "idemport_" + name
}

// Sum returns an SQL expression summing the integer column col as a
// BIGINT on every target (MariaDB's SUM is a DECIMAL, cast as SIGNED).
func (tg *Target) Sum(col string) string {
	if tg.IsMariaDB() {
		return "CAST(sum(" + col + ") AS SIGNED)"
	}
	return "CAST(sum(" + col + ") AS BIGINT)"
}

// Text returns an SQL expression casting the expression x to text on
// every target. MariaDB has no TEXT type to cast to, and its cast takes
// the connection's collation, which || will not mix with the columns'
// (utf8mb4_nopad_bin): there it is CAST … AS CHAR in the columns'
// collation.
func (tg *Target) Text(x string) string {
	if tg.IsMariaDB() {
		return "CAST(" + x + " AS CHAR) COLLATE utf8mb4_nopad_bin"
	}
	return "CAST(" + x + " AS TEXT)"
}

// TimeText returns an SQL expression rendering the timestamp column col as
// the fixed-width UTC text SQLite stores (2026-11-28T09:30:00.000000Z), so
// that one comparison serves both targets.
func (tg *Target) TimeText(col string) string {
	if tg.IsPostgres() {
		return fmt.Sprintf(`to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`, col)
	}
	if tg.IsMariaDB() {
		return fmt.Sprintf(`DATE_FORMAT(%s, '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ')`, col)
	}
	return "CAST(" + col + " AS TEXT)"
}

// Now returns the SQL expression of the database's clock in Unix
// milliseconds, the clock leases are judged by.
func (tg *Target) Now() string {
	if tg.IsPostgres() {
		return postgres.Driver{}.Now()
	}
	if tg.IsMariaDB() {
		return mysql.Driver{}.Now()
	}
	return sqlite.Driver{}.Now()
}

// LiveLeases returns how many unfinished partitions and operations are
// held by a lease that is live by the database's clock.
func (tg *Target) LiveLeases(t testing.TB) int64 {
	t.Helper()
	return Int(t, tg.DB, `SELECT (SELECT count(*) FROM `+tg.Ledger("partitions")+` WHERE done = 0 AND lease_attempt IS NOT NULL AND lease_expires > `+tg.Now()+`)
		+ (SELECT count(*) FROM `+tg.Ledger("operations")+` WHERE lease_attempt IS NOT NULL AND lease_expires > `+tg.Now()+`)`)
}

// Rebind rewrites the ? placeholders of q for the target ($1, $2, … on
// PostgreSQL).
func (tg *Target) Rebind(q string) string {
	if tg.IsPostgres() {
		return postgres.Rebind(q)
	}
	return q
}

// With returns args with the target's flags inserted after the first
// (the subcommand).
func (tg *Target) With(args ...string) []string {
	if len(args) == 0 {
		return slices.Clone(tg.Args)
	}
	out := []string{args[0]}
	out = append(out, tg.Args...)
	return append(out, args[1:]...)
}

// Cmd prepares the binary as the package-level Cmd does, pointed at the
// target: args start with the subcommand.
func (tg *Target) Cmd(t testing.TB, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	return Cmd(t, dir, env, tg.With(args...)...)
}

// Exec runs the binary to completion against the target: args start with
// the subcommand.
func (tg *Target) Exec(t testing.TB, dir string, env []string, args ...string) Run {
	t.Helper()
	return Exec(t, dir, env, tg.With(args...)...)
}

// TableExists reports whether the table name (unqualified: the target's;
// or schema.table on PostgreSQL) exists.
func (tg *Target) TableExists(t testing.TB, name string) bool {
	t.Helper()
	if tg.IsPostgres() {
		return Int(t, tg.DB, `SELECT count(*) FROM (SELECT to_regclass($1) AS r) x WHERE r IS NOT NULL`, tg.QuoteTable(t, name)) == 1
	}
	if tg.IsMariaDB() {
		return Int(t, tg.DB, `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`, name) == 1
	}
	return Int(t, tg.DB, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name) == 1
}

// IndexExists reports whether the target has an index named name (in its
// schema on PostgreSQL, its database on MariaDB).
func (tg *Target) IndexExists(t testing.TB, name string) bool {
	t.Helper()
	switch {
	case tg.IsPostgres():
		return Int(t, tg.DB, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2`, tg.Schema, name) == 1
	case tg.IsMariaDB():
		return Int(t, tg.DB, `SELECT count(DISTINCT index_name) FROM information_schema.statistics WHERE table_schema = DATABASE() AND index_name = ?`, name) == 1
	}
	return Int(t, tg.DB, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, name) == 1
}

// Tables lists the tables of the target, its own and idemport's, by bare
// name (idemport_operations on SQLite, operations on PostgreSQL), sorted.
func (tg *Target) Tables(t testing.TB) []string {
	t.Helper()
	var rows [][]any
	if tg.IsPostgres() {
		rows = Query(t, tg.DB, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, tg.Schema)
	} else if tg.IsMariaDB() {
		rows = Query(t, tg.DB, `SELECT CAST(table_name AS CHAR) FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1`)
	} else {
		rows = Query(t, tg.DB, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r[0].(string))
	}
	return names
}

// ref is the SQL name of the table with bare name name.
func (tg *Target) ref(name string) string {
	if tg.IsPostgres() {
		return QuoteOne(tg.Schema) + "." + QuoteOne(name)
	}
	return QuoteOne(name)
}

// DropLedger drops idemport's own tables, as a user wiping the ledger
// would, and returns how many it dropped. On SQLite those are the
// idemport_* tables; on PostgreSQL, where the ledger shares the test's
// schema with the target, every table of the schema but those named in
// keep (the target tables).
func (tg *Target) DropLedger(t testing.TB, keep ...string) int {
	t.Helper()
	n := 0
	for _, name := range tg.Tables(t) {
		if tg.IsPostgres() && slices.Contains(keep, name) || !tg.IsPostgres() && !strings.HasPrefix(name, "idemport_") {
			continue
		}
		if _, err := tg.DB.Exec(`DROP TABLE ` + tg.ref(name)); err != nil {
			t.Fatalf("drop %s: %v", name, err)
		}
		n++
	}
	return n
}

// Snapshot is the content of a target's tables, by bare table name, as
// Target.Snapshot took it.
type Snapshot map[string]string

// Snapshot records every row of every table of the target, target tables
// and ledger alike, except the ledger tables named in skip by bare name
// (as for Ledger: "quickcheck"). On PostgreSQL each row carries its xmin,
// the transaction that wrote its current version, so that a rewrite of a
// row with the same values shows too; on SQLite only changed content shows
// (compare the file's bytes to see more).
func (tg *Target) Snapshot(t testing.TB, skip ...string) Snapshot {
	t.Helper()
	s := Snapshot{}
	for _, name := range tg.Tables(t) {
		bare := strings.TrimPrefix(name, "idemport_")
		if (bare != name || tg.IsPostgres()) && slices.Contains(skip, bare) {
			continue
		}
		var rows [][]any
		if tg.IsPostgres() {
			rows = Query(t, tg.DB, `SELECT x.xmin::text, x::text FROM `+tg.ref(name)+` x`)
		} else {
			rows = Query(t, tg.DB, `SELECT * FROM `+tg.ref(name))
		}
		lines := make([]string, len(rows))
		for i, r := range rows {
			lines[i] = fmt.Sprintf("%#v", r)
		}
		sort.Strings(lines)
		s[name] = strings.Join(lines, "\n")
	}
	return s
}

// Diff names the tables whose content differs between s and o, or returns
// "" when none does.
func (s Snapshot) Diff(o Snapshot) string {
	var diff []string
	for name, v := range s {
		w, ok := o[name]
		switch {
		case !ok:
			diff = append(diff, name+" (gone)")
		case v != w:
			diff = append(diff, name)
		}
	}
	for name := range o {
		if _, ok := s[name]; !ok {
			diff = append(diff, name+" (new)")
		}
	}
	sort.Strings(diff)
	return strings.Join(diff, ", ")
}

// QuoteOne quotes a name, dots included.
func QuoteOne(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// QuoteTable quotes the table name as the target's driver reads it
// (sink.Limits.SplitTable: table, or schema.table where names are
// qualified, a part holding a dot quoted), each part quoted; a name the
// driver refuses fails t.
func (tg *Target) QuoteTable(t testing.TB, name string) string {
	t.Helper()
	schema, table, err := tg.limits().SplitTable(name)
	if err != nil {
		t.Fatal(err)
	}
	if schema == "" {
		return QuoteOne(table)
	}
	return QuoteOne(schema) + "." + QuoteOne(table)
}

// limits are the target's driver's.
func (tg *Target) limits() sink.Limits {
	switch tg.Name {
	case Postgres:
		return postgres.Driver{}.Limits()
	case MariaDB:
		return mysql.Driver{}.Limits()
	}
	return sqlite.Driver{}.Limits()
}
