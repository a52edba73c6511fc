package drivertest

import (
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

// ledgerRunningAndRecount: the running attempts are those without an end
// on processing operations, with where they run; a recount moves counters
// without counting a partition; the list filters by path (the
// operation's, or any attempt's) and by file ID prefix in characters;
// rejects are stored across the statements a large batch takes.
func ledgerRunningAndRecount(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	a := identity()
	b := identity()
	b.FileID = "Köln/2026-11-28"
	b.Path = "/data/koeln.csv"
	b.FileKey = 28
	c := identity()
	c.Table = "customers"
	f.create(a, attempt("a1"))
	f.create(b, attempt("b1"))
	f.create(c, attempt("c1"))
	moved := attempt("a2")
	moved.Path = "/inbox/orders-moved.csv"
	moved.RecoveredFrom = "a1"
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Start(f.ctx, tx, a.Key, moved, false, leaseMs) }); err != nil {
		t.Fatal(err)
	}
	if err := f.l.End(f.ctx, f.st.DB, "a1", "failed", "disk full", 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tx2(func(tx *sql.Tx) (bool, error) { return f.l.Complete(f.ctx, tx, c.Key, "c1", `{}`) }); err != nil {
		t.Fatal(err)
	}
	running, err := f.l.Running(f.ctx, f.st.DB)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range running {
		got = append(got, fmt.Sprintf("%s %s %s %d %d %s %q", r.ID, r.Trigger, r.Host, r.PID, r.ProcStart, r.Path, r.RecoveredFrom))
	}
	slices.Sort(got)
	want := []string{
		`a2 cron host-1 4242 9223372036854775907 /inbox/orders-moved.csv "a1"`,
		`b1 cron host-1 4242 9223372036854775907 /data/orders.csv ""`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("running:\n%q\nwant\n%q", got, want)
	}

	if err := f.tx(func(tx *sql.Tx) error { return f.l.Count(f.ctx, tx, a.Key, "a2", idemtype.Rows{Read: 4, Inserted: 4}) }); err != nil {
		t.Fatal(err)
	}
	if err := f.tx(func(tx *sql.Tx) error {
		return f.l.Recount(f.ctx, tx, a.Key, "a2", idemtype.Rows{Inserted: -3, Updated: 2, Unchanged: 1})
	}); err != nil {
		t.Fatal(err)
	}
	want1 := idemtype.Rows{Read: 4, Inserted: 1, Updated: 2, Unchanged: 1}
	if op, _ := f.get(a.Key); op.Rows != want1 {
		t.Errorf("operation counted %+v after the recount, want %+v", op.Rows, want1)
	}
	if as := f.attempts(a.Key); len(as) != 2 || as[1].Rows != want1 || as[1].Partitions.Committed != 1 {
		t.Errorf("attempts after the recount: %s", attemptsText(as))
	}

	for _, c := range []struct {
		name   string
		filter ledger.Filter
		want   string
	}{
		{"the operation's path", ledger.Filter{Path: "/data/koeln.csv"}, "[orders/Köln/2026-11-28]"},
		{"an attempt's path", ledger.Filter{Path: "/inbox/orders-moved.csv"}, "[orders/file-1]"},
		{"a path and a table", ledger.Filter{Path: "/data/orders.csv", Table: "customers"}, "[customers/file-1]"},
		{"a file ID prefix", ledger.Filter{FileIDPrefix: "Köln/"}, "[orders/Köln/2026-11-28]"},
		{"a prefix longer than the file ID", ledger.Filter{FileIDPrefix: "file-1x"}, "[]"},
	} {
		ops, err := f.l.List(f.ctx, c.filter)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, op := range ops {
			got = append(got, op.Table+"/"+op.FileID)
		}
		slices.Sort(got)
		if fmt.Sprint(got) != c.want {
			t.Errorf("%s: listed %v, want %s", c.name, got, c.want)
		}
	}

	var rs []ledger.Reject
	for o := int64(1); o <= 300; o++ {
		rs = append(rs, ledger.Reject{Reject: idemtype.Reject{Ordinal: o, Offset: o * 10, Code: "type", Message: "bad", Fields: fmt.Sprint(`["`, o, `"]`)}})
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.AddRejects(f.ctx, tx, b.Key, "b1", rs) }); err != nil {
		t.Fatal(err)
	}
	stored, err := f.l.Rejects(f.ctx, f.st.DB, b.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 300 || stored[0].Ordinal != 1 || stored[299].Ordinal != 300 || stored[299].Offset != 3000 ||
		stored[128].Fields != `["129"]` || stored[0].Attempt != "b1" {
		t.Errorf("%d rejects stored, want 300 in order", len(stored))
	}
}
