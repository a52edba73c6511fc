package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestRehashOfKnownFile covers --rehash of a file the quick check knows as
// it is: a duplicate is found by its hash alone, with no plan pass started
// beside it, and a file whose bytes changed where its stat cannot tell (a
// file system with coarse times, a platform without inodes: here the quick
// check's record is made to match the new stat) is hashed, found new, and
// planned and imported all the same.
func TestRehashOfKnownFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	csv := filepath.Join(dir, "prices.csv")
	if err := os.WriteFile(csv, []byte("id,price\n1,10\n2,20\n3,30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Open(ctx, filepath.Join(dir, "t.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := Request{Path: csv, Mapping: Mapping{Table: "prices"}}
	first := e.Import(ctx, req)
	if first.Err != nil || first.Outcome != Imported {
		t.Fatalf("first import: %+v %v", first, first.Err)
	}

	t.Run("duplicate", func(t *testing.T) {
		r := newRun(e, Request{Path: csv, Mapping: Mapping{Table: "prices"}, Rehash: true})
		r.sharesRead = true
		r.defaults()
		ident, spec, err := r.identifier().identify(ctx)
		defer spec.stop()
		if err != nil {
			t.Fatal(err)
		}
		if ident.quick || spec != nil {
			t.Fatalf("rehash of a known file: from the quick check %v, plan pass started %v; want hashed alone", ident.quick, spec != nil)
		}
		if !ident.recorded {
			t.Fatal("rehash of a known file that found its recorded digests: not taken as recorded")
		}
		// The quick check's row is left as it is: its time, set here to
		// one no run writes, stays.
		if _, err := e.st.DB.ExecContext(ctx, `UPDATE idemport_quickcheck SET checked_at = 7`); err != nil {
			t.Fatal(err)
		}
		res := e.Import(ctx, Request{Path: csv, Mapping: Mapping{Table: "prices"}, Rehash: true})
		if res.Err != nil || res.Outcome != Duplicate || res.QuickCheck {
			t.Fatalf("rehashed rerun: %+v %v", res, res.Err)
		}
		var checked int64
		if err := e.st.DB.QueryRowContext(ctx, `SELECT checked_at FROM idemport_quickcheck`).Scan(&checked); err != nil || checked != 7 {
			t.Fatalf("a rehash that confirmed the quick check wrote its row again: checked_at %d %v", checked, err)
		}
	})

	t.Run("recorded without content", func(t *testing.T) {
		// A row an older version recorded has no content digest: the
		// rehash completes it, although the stored digest matches.
		if _, err := e.st.DB.ExecContext(ctx, `UPDATE idemport_quickcheck SET content_digest = NULL`); err != nil {
			t.Fatal(err)
		}
		res := e.Import(ctx, Request{Path: csv, Mapping: Mapping{Table: "prices"}, Rehash: true})
		if res.Err != nil || res.Outcome != Duplicate || res.QuickCheck {
			t.Fatalf("rehashed rerun: %+v %v", res, res.Err)
		}
		var content string
		if err := e.st.DB.QueryRowContext(ctx, `SELECT coalesce(content_digest, '') FROM idemport_quickcheck`).Scan(&content); err != nil || content != first.ContentDigest {
			t.Fatalf("content digest of the quick check's row after the rehash: %q %v, want %q", content, err, first.ContentDigest)
		}
	})

	t.Run("changed unseen", func(t *testing.T) {
		// The same size, other bytes; then the quick check's record of
		// the first version's digests is made to match the new stat.
		if err := os.WriteFile(csv, []byte("id,price\n1,10\n2,20\n3,31\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := first.ContentDigest
		st, err := os.Stat(csv)
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		if err := e.st.Ledger.RememberDigest(ctx, e.st.DB, fileStat(host, csv, st), old, old); err != nil {
			t.Fatal(err)
		}
		if res := e.Import(ctx, req); res.Outcome != Duplicate || !res.QuickCheck {
			t.Fatalf("without --rehash the quick check answers: %+v %v", res, res.Err)
		}
		again := req
		again.Rehash = true
		res := e.Import(ctx, again)
		if res.Err != nil || res.Outcome != Imported || res.QuickCheck || res.Rows.Inserted != 3 || res.ContentDigest == old {
			t.Fatalf("rehash of a file changed where its stat cannot tell: %+v %v", res, res.Err)
		}
		var stored string
		if err := e.st.DB.QueryRowContext(ctx, `SELECT digest FROM idemport_quickcheck`).Scan(&stored); err != nil || stored != res.ContentDigest {
			t.Fatalf("the quick check's row after a rehash found other digests: %q %v, want %q", stored, err, res.ContentDigest)
		}
		var n int
		if err := e.st.DB.QueryRowContext(ctx, `SELECT count(*) FROM prices WHERE price = 31`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("rows of the second version: %d %v", n, err)
		}
	})
}
