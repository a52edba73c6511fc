package drivertest

import (
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

// ledgerReplay: replay finds which ordinals are stored rejects, marks the
// replayed ones with their attempt and adds its counters to the attempt;
// dropping payloads clears values and keeps codes, once.
func ledgerReplay(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	id := identity()
	f.create(id, attempt("a1"))
	rs := []ledger.Reject{
		{Reject: idemtype.Reject{Ordinal: 3, Offset: 40, Column: "qty", Value: "x", Row: "3,x", Code: "type", Message: "not an integer"}},
		{Reject: idemtype.Reject{Ordinal: 7, Offset: 90, Column: "qty", Value: "y", Row: "7,y", Code: "type", Message: "not an integer"}},
		{Reject: idemtype.Reject{Ordinal: 9, Offset: 120, Column: "at", Value: "soon", Row: "9,soon", Code: "type", Message: "not a timestamp"}},
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.AddRejects(f.ctx, tx, id.Key, "a1", rs) }); err != nil {
		t.Fatal(err)
	}
	// Another operation's reject at an asked ordinal does not count.
	other := ledger.Key{Table: "orders", FileID: "file-2"}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.AddRejects(f.ctx, tx, other, "a1", rs[:1]) }); err != nil {
		t.Fatal(err)
	}
	ordinals := []int64{1, 3, 7, 8}
	for o := int64(1000); o < 1600; o++ { // more than one chunk
		ordinals = append(ordinals, o)
	}
	ordinals = append(ordinals, 9)
	missing, err := f.l.NotRejected(f.ctx, f.st.DB, id.Key, ordinals)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(missing[:2], len(missing)); got != "[1 8] 602" || slices.Contains(missing, 9) {
		t.Fatalf("not rejected: %s", got)
	}
	before := f.attemptRows(id.Key, "a1")
	counts := idemtype.Rows{Read: 2, Inserted: 1, Updated: 1}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Replayed(f.ctx, tx, id.Key, "a1", []int64{3, 7}, counts) }); err != nil {
		t.Fatal(err)
	}
	after := f.attemptRows(id.Key, "a1")
	if d := fmt.Sprint(after.Read-before.Read, after.Inserted-before.Inserted, after.Updated-before.Updated, after.Unchanged-before.Unchanged); d != "2 1 1 0" {
		t.Errorf("the replay counted %s, want 2 1 1 0", d)
	}
	render := func(k ledger.Key) []string {
		t.Helper()
		got, err := f.l.Rejects(f.ctx, f.st.DB, k)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range got {
			out = append(out, fmt.Sprintf("%d %q %q %s by=%q at=%v", r.Ordinal, r.Value, r.Row, r.Code, r.ReplayedBy, r.ReplayedAt > 0))
		}
		return out
	}
	want := []string{`3 "x" "3,x" type by="a1" at=true`, `7 "y" "7,y" type by="a1" at=true`, `9 "soon" "9,soon" type by="" at=false`}
	if got := render(id.Key); !slices.Equal(got, want) {
		t.Errorf("rejects after replay:\n%q\nwant\n%q", got, want)
	}
	for i, wantN := range []int64{3, 0} {
		var n int64
		if err := f.tx(func(tx *sql.Tx) (err error) { n, err = f.l.DropRejectPayloads(f.ctx, tx, id.Key); return err }); err != nil {
			t.Fatal(err)
		}
		if n != wantN {
			t.Errorf("drop %d cleared %d, want %d", i, n, wantN)
		}
	}
	want = []string{`3 "" "" type by="a1" at=true`, `7 "" "" type by="a1" at=true`, `9 "" "" type by="" at=false`}
	if got := render(id.Key); !slices.Equal(got, want) {
		t.Errorf("rejects after dropping payloads:\n%q\nwant\n%q", got, want)
	}
	if got := render(other); !slices.Equal(got, []string{`3 "x" "3,x" type by="" at=false`}) {
		t.Errorf("another operation's rejects changed: %q", got)
	}
}

// attemptRows returns the counters of attempt on k.
func (f *ledgerFx) attemptRows(k ledger.Key, attempt string) idemtype.Rows {
	f.t.Helper()
	as, err := f.l.Attempts(f.ctx, k)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, a := range as {
		if a.ID == attempt {
			return a.Rows
		}
	}
	f.t.Fatalf("no attempt %s on %s", attempt, k)
	return idemtype.Rows{}
}
