package storetest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3" // the SQLite store

	"github.com/idemport/idemport/internal/dialect"
	"github.com/idemport/idemport/internal/pgtest"
)

// Store is an empty database for one case: where the stores' tables go.
type Store struct {
	DB      *sql.DB
	Dialect dialect.Dialect
	// Schema is the PostgreSQL schema that holds the tables; the suite
	// creates it with dialect.CreateSchema before migrating. Empty on SQLite.
	Schema string
	// Prefix names the tables: "idemport_" on SQLite, the quoted schema
	// and a dot on PostgreSQL.
	Prefix string
}

// SQLite returns a fresh SQLite file in t.TempDir(), opened as the pipeline
// opens its targets: WAL, transactions that take the write lock at BEGIN,
// and a busy timeout.
func SQLite(t *testing.T) Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_txlock=immediate&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return Store{DB: db, Dialect: dialect.SQLite, Prefix: "idemport_"}
}

// Postgres returns a store in a schema of its own on the server named by
// IDEMPORT_TEST_POSTGRES, not yet created, and dropped when t ends; it skips
// t when the variable is not set. The schema is not on the pool's search
// path, so every statement must name its tables through the prefix.
func Postgres(t *testing.T) Store {
	t.Helper()
	db, _ := pgtest.Open(t)
	schema := pgtest.Name()
	t.Cleanup(func() {
		if _, err := db.ExecContext(context.Background(), `DROP SCHEMA IF EXISTS `+dialect.QuoteOne(schema)+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return Store{DB: db, Dialect: dialect.Postgres, Schema: schema, Prefix: dialect.SchemaPrefix(schema)}
}

// inTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise; it returns fn's error.
func inTx(t *testing.T, db *sql.DB, fn func(tx *sql.Tx) error) error {
	t.Helper()
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return nil
}

// createSchema creates st's schema (PostgreSQL), as a caller must before
// migrating.
func createSchema(t *testing.T, st Store) {
	t.Helper()
	if err := st.Dialect.CreateSchema(context.Background(), st.DB, st.Schema); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists the store's tables and recorded migrations, to tell
// whether a migration changed anything.
func snapshot(t *testing.T, st Store) []string {
	t.Helper()
	var q string
	var args []any
	if st.Dialect == dialect.Postgres {
		q = `SELECT c.relkind::text || ' ' || c.relname || ' ' || coalesce(string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attnum), '')
			FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			WHERE c.relnamespace = $1::regnamespace GROUP BY c.relkind, c.relname ORDER BY 1`
		args = []any{dialect.QuoteOne(st.Schema)}
	} else {
		q = `SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name`
	}
	out := column(t, st.DB, q, args...)
	return append(out, column(t, st.DB, `SELECT component || ' ' || version || ' ' || applied_at FROM `+st.Prefix+`migrations ORDER BY 1`)...)
}

// column returns the single text column of every row q selects.
func column(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
