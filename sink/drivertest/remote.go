package drivertest

import (
	"testing"

	"github.com/idemport/idemport/ledger"
)

// ledgerRemote: the remote quick check knows an object by URL, ETag,
// version id and size, and a new version replaces the old one's record.
func ledgerRemote(t *testing.T, open func(t *testing.T) Store) {
	{
		f := newLedger(t, open)
		st := ledger.RemoteStat{URL: "s3://b/k.csv", ETag: `"abc"`, Size: 10}
		known := func(st ledger.RemoteStat) (string, string) {
			t.Helper()
			s, c, err := f.l.KnownRemote(f.ctx, f.st.DB, st)
			if err != nil {
				t.Fatal(err)
			}
			return s, c
		}
		if s, c := known(st); s != "" || c != "" {
			t.Fatalf("unknown object known: %q %q", s, c)
		}
		if err := f.l.RememberRemote(f.ctx, f.st.DB, st, digest("s"), digest("c")); err != nil {
			t.Fatal(err)
		}
		if s, c := known(st); s != digest("s") || c != digest("c") {
			t.Fatalf("known %q %q", s, c)
		}
		for _, other := range []ledger.RemoteStat{
			{URL: st.URL, ETag: `"abd"`, Size: 10},
			{URL: st.URL, ETag: st.ETag, Size: 11},
			{URL: st.URL, ETag: st.ETag, Version: "v2", Size: 10},
			{URL: "s3://b/other.csv", ETag: st.ETag, Size: 10},
		} {
			if s, _ := known(other); s != "" {
				t.Fatalf("%+v taken for %+v", other, st)
			}
		}
		// A new version replaces the old one's record.
		st2 := ledger.RemoteStat{URL: st.URL, ETag: `"new"`, Size: 12}
		if err := f.l.RememberRemote(f.ctx, f.st.DB, st2, digest("s2"), digest("c2")); err != nil {
			t.Fatal(err)
		}
		if s, _ := known(st); s != "" {
			t.Fatal("the old version is still known")
		}
		if s, c := known(st2); s != digest("s2") || c != digest("c2") {
			t.Fatalf("known %q %q", s, c)
		}
		// Without a validator nothing is remembered.
		bare := ledger.RemoteStat{URL: "https://h/x.csv", Size: 3}
		if err := f.l.RememberRemote(f.ctx, f.st.DB, bare, digest("s"), digest("c")); err != nil {
			t.Fatal(err)
		}
		if s, _ := known(bare); s != "" {
			t.Fatal("an object without ETag was remembered")
		}
	}
}
