package pipeline

import (
	"context"
	"reflect"
	"testing"

	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// TestKeyLimits: a table the driver will create bounds each key column's
// text by its share of the key's index (sink.Limits.KeyChars), which the
// plan pass checks; an ordinal target, or a driver whose keys are not
// bounded, has no such limit.
func TestKeyLimits(t *testing.T) {
	t.Parallel()
	innodb := sink.Limits{KeyBytes: 3072, CharBytes: 4}
	key := reader.Limit{MaxChars: 384, Key: true, Table: "t"}
	if got, want := keyLimits(sink.Target{Table: "t", Key: []string{"a", "b"}}, innodb), map[string]reader.Limit{"a": key, "b": key}; !reflect.DeepEqual(got, want) {
		t.Errorf("two-column key: %v, want %v", got, want)
	}
	if got := keyLimits(sink.Target{Table: "t"}, innodb); got != nil {
		t.Errorf("ordinal target: %v, want none", got)
	}
	if got := keyLimits(sink.Target{Table: "t", Key: []string{"a"}}, sink.Limits{}); got != nil {
		t.Errorf("unbounded keys: %v, want none", got)
	}
}

// boundedKeys is a driver whose keys' index holds 16 bytes, 4 characters
// of text: MariaDB's bound, made small.
type boundedKeys struct{ sink.Driver }

func (d boundedKeys) Limits() sink.Limits {
	l := d.Driver.Limits()
	l.KeyBytes, l.CharBytes = 16, 4
	return l
}

// TestKeyTooLongIsABadRow: into a table the driver will create, a key
// longer than a key column holds is a bad row of the plan, named by its
// row and column, refused before any effect; not a value cut short, nor a
// write that fails.
func TestKeyTooLongIsABadRow(t *testing.T) {
	t.Parallel()
	f := newFx(t, "sqlite")
	d, err := Drivers().Lookup(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Path: f.write(t, "k.csv", "id,v\nabcd,x\nabcde,y\n"), Mapping: Mapping{Table: "k", Key: []string{"id"}}}
	res := f.open(t, Options{Drivers: sink.Registry{boundedKeys{d}}}).Import(context.Background(), req)
	if res.Outcome != Refused || res.Refusal == nil || len(res.Refusal.Rejects) != 1 {
		t.Fatalf("%s (%v), refusal %+v; want refused for one bad row", res.Outcome, res.Err, res.Refusal)
	}
	if r := res.Refusal.Rejects[0]; r.Ordinal != 2 || r.Column != "id" || r.Code != "length" {
		t.Errorf("bad row %d, column %q, code %q; want row 2, column id, length", r.Ordinal, r.Column, r.Code)
	}
	if n := f.rows(t, `SELECT count(*) FROM sqlite_master WHERE name = 'k'`); n[0][0] != int64(0) {
		t.Errorf("the refused file made its table")
	}
}
