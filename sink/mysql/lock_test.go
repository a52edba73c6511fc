package mysql

import (
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// TestLock: a key Lock holds in one transaction makes another's Lock of
// it wait and fail as Locked once the busy timeout passes, while other
// keys stay free; the lock ends with its transaction, rolled back too.
func TestLock(t *testing.T) {
	dsn := freshDSN(t)
	db, err := Driver{}.Open(t.Context(), dsn, sink.Settings{BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.DB.Close()
	ctx, d := t.Context(), Driver{}
	holder, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if err := d.Lock(ctx, holder, "orders\nf1"); err != nil {
		t.Fatal(err)
	}
	other, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if err := d.Lock(ctx, other, "orders\nf2"); err != nil {
		t.Fatalf("another key: %v", err)
	}
	if err := d.Lock(ctx, other, "orders\nf1"); err == nil || !d.Locked(err) {
		t.Fatalf("a held key: %v, want an error Locked recognises", err)
	}
	other.Rollback()
	holder.Rollback()
	again, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Rollback()
	if err := d.Lock(ctx, again, "orders\nf1"); err != nil {
		t.Fatalf("after the holder rolled back: %v", err)
	}
}
