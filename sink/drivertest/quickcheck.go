package drivertest

import (
	"slices"
	"testing"

	"github.com/idemport/idemport/ledger"
)

// ledgerQuickCheck: the local quick check knows a file by every field of
// its stat, a new stat of the same host and path replaces the old one's
// record, and the digests are found from each other across hosts.
func ledgerQuickCheck(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	st := ledger.FileStat{Host: "host-1", Path: "/data/orders.csv", Size: 10, MtimeNs: 1_000, CtimeNs: 2_000, Inode: 1 << 40, Device: 1<<63 + 7}
	known := func(st ledger.FileStat) (string, string) {
		t.Helper()
		s, c, err := f.l.KnownDigest(f.ctx, f.st.DB, st)
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
	if s, c := known(st); s != "" || c != "" {
		t.Fatalf("unknown file known: %q %q", s, c)
	}
	if c, err := f.l.ContentOf(f.ctx, f.st.DB, digest("s")); err != nil || c != "" {
		t.Fatalf("content of an unknown digest: %q %v", c, err)
	}
	if err := f.l.RememberDigest(f.ctx, f.st.DB, st, digest("s"), digest("c")); err != nil {
		t.Fatal(err)
	}
	if s, c := known(st); s != digest("s") || c != digest("c") {
		t.Fatalf("known %q %q", s, c)
	}
	for _, change := range []func(*ledger.FileStat){
		func(o *ledger.FileStat) { o.Host = "host-2" },
		func(o *ledger.FileStat) { o.Path = "/data/other.csv" },
		func(o *ledger.FileStat) { o.Size++ },
		func(o *ledger.FileStat) { o.MtimeNs++ },
		func(o *ledger.FileStat) { o.CtimeNs++ },
		func(o *ledger.FileStat) { o.Inode++ },
		func(o *ledger.FileStat) { o.Device++ },
	} {
		other := st
		change(&other)
		if s, _ := known(other); s != "" {
			t.Fatalf("%+v taken for %+v", other, st)
		}
	}
	// Another host's copy of the same bytes, and bytes decoding to the
	// same data (a compressed copy).
	copied := st
	copied.Host = "host-2"
	if err := f.l.RememberDigest(f.ctx, f.st.DB, copied, digest("s"), digest("c")); err != nil {
		t.Fatal(err)
	}
	gz := ledger.FileStat{Host: "host-1", Path: "/data/orders.csv.gz", Size: 5}
	if err := f.l.RememberDigest(f.ctx, f.st.DB, gz, digest("gz"), digest("c")); err != nil {
		t.Fatal(err)
	}
	if c, err := f.l.ContentOf(f.ctx, f.st.DB, digest("gz")); err != nil || c != digest("c") {
		t.Fatalf("content of the compressed copy: %q %v", c, err)
	}
	stored, err := f.l.StoredOf(f.ctx, f.st.DB, digest("c"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(stored)
	want := []string{digest("gz"), digest("s")}
	slices.Sort(want)
	if !slices.Equal(stored, want) {
		t.Fatalf("stored of the content: %q, want %q", stored, want)
	}
	// A plain file whose bytes are its data is not a stored form of it.
	plain := ledger.FileStat{Host: "host-1", Path: "/data/plain.csv", Size: 3}
	if err := f.l.RememberDigest(f.ctx, f.st.DB, plain, digest("p"), digest("p")); err != nil {
		t.Fatal(err)
	}
	if stored, err := f.l.StoredOf(f.ctx, f.st.DB, digest("p")); err != nil || len(stored) != 0 {
		t.Fatalf("stored of a plain file's content: %q %v", stored, err)
	}
	// The file rewritten in place replaces its record.
	st2 := st
	st2.Size, st2.MtimeNs, st2.CtimeNs = 12, 3_000, 4_000
	if err := f.l.RememberDigest(f.ctx, f.st.DB, st2, digest("s2"), digest("c2")); err != nil {
		t.Fatal(err)
	}
	if s, _ := known(st); s != "" {
		t.Fatal("the old stat is still known")
	}
	if s, c := known(st2); s != digest("s2") || c != digest("c2") {
		t.Fatalf("known %q %q", s, c)
	}
	if s, _ := known(copied); s != digest("s") {
		t.Fatalf("the other host's record changed: %q", s)
	}
}
