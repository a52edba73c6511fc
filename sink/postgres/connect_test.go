package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink"
)

// TestFull tells a full disk (SQLSTATE 53100), wrapped or not, from other
// errors.
func TestFull(t *testing.T) {
	full := &pgconn.PgError{Code: "53100", Message: "could not extend file: No space left on device"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{full, true},
		{fmt.Errorf("commit partition 3: %w", full), true},
		{&pgconn.PgError{Code: "53200"}, false}, // out of memory
		{errors.New("no space"), false},
		{nil, false},
	} {
		if got := (Driver{}).Full(tc.err); got != tc.want {
			t.Errorf("Full(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestReadOnlyOpenWritesNothing: every transaction of a read-only Open is
// read-only, explicit or implicit, so a command that only reads cannot
// write by mistake (SQLSTATE 25006).
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	_, schema := pgtest.Open(t)
	ctx := context.Background()
	db, err := Driver{}.Open(ctx, pgtest.URL(t, schema), sink.Settings{ReadOnly: true, StateSchema: schema, BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.DB.Close()
	var pg *pgconn.PgError
	if _, err := db.DB.ExecContext(ctx, `CREATE TABLE t (id int)`); !errors.As(err, &pg) || pg.Code != "25006" {
		t.Fatalf("CREATE TABLE on a read-only open: %v", err)
	}
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE t (id int)`); !errors.As(err, &pg) || pg.Code != "25006" {
		t.Fatalf("CREATE TABLE in a transaction of a read-only open: %v", err)
	}
}
