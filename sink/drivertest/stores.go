package drivertest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/idemport/idemport/sink"
)

// Store is a database for one case of the stores' suite (the ledger, the
// checkpoints, the outbox), opened through its driver as the pipeline
// opens it.
type Store struct {
	DB     *sql.DB
	Driver sink.Driver
	// Prefix places the stores' tables (the driver's Database.Prefix).
	Prefix string
	// Settings are those DB was opened with, and Open opens the same
	// database again through the driver with s, as another process would,
	// creating what the driver's Open creates. A fixture whose driver has
	// a state schema drops, when its test ends, every schema whose name
	// begins with Settings.StateSchema.
	Settings sink.Settings
	Open     func(ctx context.Context, s sink.Settings) (*sink.Database, error)
	// Catalog lists the tables, with their columns, of the database's
	// namespace that holds the stores' tables, to tell whether a migration
	// changed anything.
	Catalog func(t *testing.T, db *sql.DB) []string
}

// OpenStore opens the database dsn names through d with s, closed when t
// ends. Nothing is migrated.
func OpenStore(t *testing.T, d sink.Driver, dsn string, s sink.Settings, catalog func(t *testing.T, db *sql.DB) []string) Store {
	t.Helper()
	open := func(ctx context.Context, s sink.Settings) (*sink.Database, error) { return d.Open(ctx, dsn, s) }
	db, err := open(t.Context(), s)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.DB.Close() })
	return Store{DB: db.DB, Driver: d, Prefix: db.Prefix, Settings: s, Open: open, Catalog: catalog}
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

// snapshot lists the store's tables and recorded migrations, to tell
// whether a migration changed anything.
func snapshot(t *testing.T, st Store) []string {
	t.Helper()
	out := st.Catalog(t, st.DB)
	return append(out, Strings(t, st.DB, `SELECT component || ' ' || version || ' ' || applied_at FROM `+st.Prefix+`migrations ORDER BY 1`)...)
}

// Strings returns the single text column of every row q selects.
func Strings(t *testing.T, db *sql.DB, q string, args ...any) []string {
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
