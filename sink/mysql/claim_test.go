package mysql

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/idemport/idemport/ledger"
)

// TestClaimSkipsHeldDelivery: while one transaction holds a claimed
// delivery, a claim in another transaction takes the next one, the first
// of its sink, rather than none. (InnoDB locks every row an ordered
// SELECT … FOR UPDATE SKIP LOCKED reads, so that spelling of the claim
// left a second claimer with nothing to do while deliveries waited.)
func TestClaimSkipsHeldDelivery(t *testing.T) {
	st := openStore(t)
	ctx := t.Context()
	l := ledger.New(st.DB, st.Driver, st.Prefix)
	if err := l.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key := ledger.Key{Table: "orders", FileID: "f1"}
	for i := range 3 {
		tx, err := st.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("e%d", i)
		ev := ledger.Event{ID: id, Kind: "import.completed", Key: key, AttemptID: "a1", Payload: `{}`, CreatedAt: int64(i + 1)}
		if err := l.RecordEvent(ctx, tx, ev, []ledger.SinkRef{{ID: "s1", Name: "one"}}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(owner string) (*sql.Tx, *ledger.Delivery) {
		t.Helper()
		tx, err := st.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback() })
		d, err := l.ClaimDelivery(ctx, tx, []string{"s1"}, owner, 60_000)
		if err != nil {
			t.Fatalf("claim by %s: %v", owner, err)
		}
		return tx, d
	}
	_, first := claim("w1")
	if first == nil || first.EventID != "e0" {
		t.Fatalf("first claim: %+v, want e0", first)
	}
	_, second := claim("w2") // while w1's transaction holds e0
	if second == nil || second.EventID != "e1" {
		t.Fatalf("claim while e0 is held: %+v, want e1", second)
	}
}
