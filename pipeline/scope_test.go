package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// TestScopeText: a scope's text escapes what separates its terms, so that
// one column holding "x&b=2" and the two terms a=x, b=2 are spelt apart
// (and parse back), while a scope without such characters is spelt as
// before escaping, keeping its mapping digest and its snapshots' records.
func TestScopeText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		terms  []sink.Term
		text   string
		legacy string
	}{
		{"whole table", nil, "", ""},
		{"plain", []sink.Term{{Column: "region", Value: "EU"}, {Column: "dept", Value: "7"}}, "dept=7&region=EU", "dept=7&region=EU"},
		{"one column holding &, =", []sink.Term{{Column: "a", Value: "x&b=2"}}, "a=x%26b%3D2", "a=x&b=2"},
		{"two columns", []sink.Term{{Column: "a", Value: "x"}, {Column: "b", Value: "2"}}, "a=x&b=2", "a=x&b=2"},
		{"percent", []sink.Term{{Column: "rate", Value: "100%"}, {Column: "a=b", Value: "%26"}}, "a%3Db=%2526&rate=100%25", "a=b=%26&rate=100%"},
		{"empty value", []sink.Term{{Column: "a", Value: ""}}, "a=", "a="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Snapshot{Scope: c.terms}
			if got := s.ScopeText(); got != c.text {
				t.Errorf("ScopeText: %q, want %q", got, c.text)
			}
			if got := s.legacyScopeText(); got != c.legacy {
				t.Errorf("legacy text: %q, want %q", got, c.legacy)
			}
			back, err := store.ParseScope(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := (&Snapshot{Scope: back}).ScopeText(); got != c.text {
				t.Errorf("parsed back: %v spelt %q", back, got)
			}
		})
	}
	one := Mapping{Table: "t", Snapshot: &Snapshot{Scope: []sink.Term{{Column: "a", Value: "x&b=2"}}}}
	two := Mapping{Table: "t", Snapshot: &Snapshot{Scope: []sink.Term{{Column: "a", Value: "x"}, {Column: "b", Value: "2"}}}}
	_, d1 := one.canonical(MappingVersion, reader.CSV, ',', true)
	_, d2 := two.canonical(MappingVersion, reader.CSV, ',', true)
	if d1 == d2 {
		t.Errorf("the two scopes have one mapping digest %s", d1)
	}
	// The digests of scopes without such characters did not change.
	plain := Mapping{Table: "t", Key: []string{"id"}, Snapshot: &Snapshot{Scope: []sink.Term{{Column: "region", Value: "EU"}}}}
	if _, d := plain.canonical(1, reader.CSV, ',', true); d != "sha256:"+sha256Hex(`{"mapping_version":1,"table":"t","key":["id"],"version_column":"","columns":{},"format":"csv","delimiter":",","quotes":true,"snapshot":{"delete":"hard","scope":"region=EU"}}`) {
		t.Errorf("digest of a plain scope changed: %s", d)
	}
}

// TestScopeLegacyLedger: an operation and a snapshot record made before
// scopes were escaped (the scope a="x&b=2" spelt a=x&b=2) are still this
// scope's: a rerun is a duplicate, not a conflict, an older extract is
// stale, and a newer one applies and records the scope as now spelt.
func TestScopeLegacyLedger(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		f := newFx(t, name)
		ctx := context.Background()
		m := Mapping{Table: "t", Key: []string{"id"}, Snapshot: &Snapshot{Scope: []sink.Term{{Column: "a", Value: "x&b=2"}}}}
		day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
		mon := f.write(t, "mon.csv", "id,a\n1,x&b=2\n2,x&b=2\n")
		f.wantOutcome(t, f.e.Import(ctx, Request{Path: mon, Mapping: m, AsOf: day(23)}), Imported)
		// Make the ledger what the version before escaping left.
		old := m
		old.Snapshot = &Snapshot{Scope: m.Snapshot.Scope, legacy: true}
		mapping, digest := old.canonical(1, reader.CSV, ',', true)
		f.exec(t, f.tg.Rebind(`UPDATE `+f.tg.Ledger("operations")+` SET mapping = '`+mapping+`', mapping_digest = '`+digest+`'`))
		f.exec(t, `UPDATE `+f.tg.Ledger("snapshots")+` SET scope = 'a=x&b=2'`)

		f.wantOutcome(t, f.e.Import(ctx, Request{Path: mon, Mapping: m, AsOf: day(23)}), Duplicate)
		sun := f.write(t, "sun.csv", "id,a\n1,x&b=2\n")
		f.wantOutcome(t, f.e.Import(ctx, Request{Path: sun, Mapping: m, AsOf: day(22)}), Stale)
		tue := f.write(t, "tue.csv", "id,a\n1,x&b=2\n2,x&b=2\n3,x&b=2\n")
		f.wantOutcome(t, f.e.Import(ctx, Request{Path: tue, Mapping: m, AsOf: day(24)}), Imported)
		var scopes []string
		for _, r := range f.rows(t, `SELECT scope FROM `+f.tg.Ledger("snapshots")+` ORDER BY as_of`) {
			scopes = append(scopes, r[0].(string))
		}
		if !slices.Equal(scopes, []string{"a=x&b=2", "a=x%26b%3D2"}) {
			t.Errorf("snapshot records' scopes: %q", scopes)
		}
	})
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
