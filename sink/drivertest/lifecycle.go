package drivertest

import (
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

// ledgerLifecycle: an operation replaced by a new one of its key moves to
// the past operations with its identity and counters, in the state its
// replacement gives it (replaced by a version, superseded, or still
// undone), and its rejects go with it; the new operation records what it
// replaces; a duplicate seen elsewhere records its path; an attempt found
// dead is recorded died unless it had ended.
func ledgerLifecycle(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	k := id.Key
	reject := []ledger.Reject{{Reject: idemtype.Reject{Ordinal: 3, Offset: 40, Column: "qty", Value: "x", Code: "type", Message: "not an integer"}}}
	replace := func(by string) {
		t.Helper()
		if err := f.tx(func(tx *sql.Tx) error { return f.l.Replace(f.ctx, tx, k, by) }); err != nil {
			t.Fatalf("replace %s: %v", k, err)
		}
		if op, _ := f.get(k); op != nil {
			t.Fatalf("replaced operation remains: %+v", op)
		}
		if rs, err := f.l.Rejects(f.ctx, f.st.DB, k); err != nil || len(rs) != 0 {
			t.Fatalf("the rejects of a replaced operation remain: %v %v", rs, err)
		}
	}

	// Completed, replaced by another version (--replace).
	f.create(id, attempt("a1"))
	if err := f.tx(func(tx *sql.Tx) error {
		if err := f.l.AddRejects(f.ctx, tx, k, "a1", reject); err != nil {
			return err
		}
		if err := f.l.Count(f.ctx, tx, k, "a1", idemtype.Rows{Read: 5, Inserted: 4, Rejected: 1}); err != nil {
			return err
		}
		_, err := f.l.Complete(f.ctx, tx, k, "a1", `{"n":1}`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	replace(digest("v2"))

	// Its successor replaces it, then is refused and superseded.
	v2 := id
	v2.ContentDigest = digest("v2")
	f.create(v2, attempt("a2"))
	if err := f.tx(func(tx *sql.Tx) error { return f.l.MarkReplaces(f.ctx, tx, k, id.ContentDigest) }); err != nil {
		t.Fatal(err)
	}
	if op, _ := f.get(k); op.Replaces != id.ContentDigest || op.ContentDigest != v2.ContentDigest {
		t.Errorf("the operation replacing %s records %q", id.ContentDigest, op.Replaces)
	}
	if err := f.tx(func(tx *sql.Tx) error {
		if err := f.l.AddRejects(f.ctx, tx, k, "a2", reject); err != nil {
			return err
		}
		return f.l.Refuse(f.ctx, tx, k, "a2", `{"rejected":1}`, idemtype.Rows{Read: 2, Rejected: 1})
	}); err != nil {
		t.Fatal(err)
	}
	replace(digest("v3"))

	// A third, undone, is replaced as undone; a completed one replaced
	// without a version (a new operation after undo's forget) is
	// superseded.
	v3 := id
	v3.ContentDigest = digest("v3")
	v3.Path = "/data/v3.csv"
	f.create(v3, attempt("a3"))
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Close(f.ctx, tx, k, ledger.Undone) }); err != nil {
		t.Fatal(err)
	}
	replace("")
	f.create(id, attempt("a4"))
	if err := f.tx(func(tx *sql.Tx) error { _, err := f.l.Complete(f.ctx, tx, k, "a4", `{}`); return err }); err != nil {
		t.Fatal(err)
	}
	replace("")

	past := func(fl ledger.Filter) []string {
		t.Helper()
		ops, err := f.l.Past(f.ctx, fl)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range ops {
			if o.Key != k || o.FileKey != id.FileKey || o.Mapping != id.Mapping || o.UpdatedAt < o.CreatedAt {
				t.Errorf("past operation: %+v", o)
			}
			out = append(out, fmt.Sprintf("%s %s by %q, completed by %q: %q rows %d/%d/%d, replaced by %q",
				o.ContentDigest[7:11], o.State, o.Path, o.CompletedBy, o.Outcome, o.Rows.Read, o.Rows.Inserted, o.Rows.Rejected, o.ReplacedBy))
		}
		slices.Sort(out)
		return out
	}
	hex := func(s string) string { return digest(s)[7:11] }
	all := []string{
		hex("content") + ` replaced by "/data/orders.csv", completed by "a1": "{\"n\":1}" rows 5/4/1, replaced by "` + digest("v2") + `"`,
		hex("content") + ` superseded by "/data/orders.csv", completed by "a4": "{}" rows 0/0/0, replaced by ""`,
		hex("v2") + ` superseded by "/data/orders.csv", completed by "": "{\"rejected\":1}" rows 2/0/1, replaced by ""`,
		hex("v3") + ` undone by "/data/v3.csv", completed by "": "" rows 0/0/0, replaced by ""`,
	}
	undone := all[3]
	slices.Sort(all)
	if got := past(ledger.Filter{}); !slices.Equal(got, all) {
		t.Errorf("past operations:\n%q\nwant\n%q", got, all)
	}
	if got := past(ledger.Filter{State: ledger.Undone, Table: "orders"}); len(got) != 1 || got[0] != undone {
		t.Errorf("past operations undone: %q", got)
	}
	if got := past(ledger.Filter{Path: "/data/v3.csv"}); len(got) != 1 || got[0] != undone {
		t.Errorf("past operations at /data/v3.csv: %q", got)
	}
	if got := past(ledger.Filter{Table: "customers"}); len(got) != 0 {
		t.Errorf("past operations of another table: %q", got)
	}

	// A duplicate run seen under another path records it.
	f.create(id, attempt("a5"))
	if err := f.l.Seen(f.ctx, f.st.DB, k, "/moved/orders.csv"); err != nil {
		t.Fatal(err)
	}
	if op, _ := f.get(k); op.Path != "/moved/orders.csv" {
		t.Errorf("seen under /moved/orders.csv, recorded %q", op.Path)
	}

	// An attempt found dead is recorded died; one that ended keeps its end.
	if err := f.l.End(f.ctx, f.st.DB, "a4", "imported", "", 0, 0); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"a4", "a5"} {
		if err := f.l.Died(f.ctx, f.st.DB, a); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, a := range f.attempts(k) {
		if (a.ID == "a4" || a.ID == "a5") && a.EndedAt < a.StartedAt {
			t.Errorf("attempt %s ended at %d, started at %d", a.ID, a.EndedAt, a.StartedAt)
		}
		got = append(got, a.ID+" "+a.Outcome)
	}
	if want := "[a4 imported a5 died]"; fmt.Sprint(got[len(got)-2:]) != want {
		t.Errorf("attempts %v, want the last two %s", got, want)
	}
}
