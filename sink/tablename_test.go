package sink_test

import (
	"strings"
	"testing"

	"github.com/idemport/idemport/sink"
)

// TestSplitTable checks the one reading of a target table name: table or
// schema.table, each part optionally quoted (a quoted part may hold a dot
// or a doubled quote), anything else refused naming --table and the name.
func TestSplitTable(t *testing.T) {
	t.Parallel()
	const pg, maria = `"`, "\"`"
	for _, c := range []struct {
		name, quotes, schema, table, err string
	}{
		{"orders", pg, "", "orders", ""},
		{"sales.orders", pg, "sales", "orders", ""},
		{`"sales"."orders"`, pg, "sales", "orders", ""},
		{`"snap.items"`, pg, "", "snap.items", ""},
		{`"a.b"."c.d"`, pg, "a.b", "c.d", ""},
		{`"say ""hi"""`, pg, "", `say "hi"`, ""},
		{"`a`.`b.c`", maria, "a", "b.c", ""},
		{"`a.b`", pg, "`a", "b`", ""}, // a backtick quotes nothing on PostgreSQL
		{"a.b.c", pg, "", "", "--table a.b.c: it has 3 parts; a table name is table or schema.table"},
		{"a.b.c", maria, "", "", "--table a.b.c: it has 3 parts;"},
		{`"a"."b"."c.d"`, pg, "", "", `--table "a"."b"."c.d": it has 3 parts;`},
		{"`x`.y.`z`", maria, "", "", "--table `x`.y.`z`: it has 3 parts;"},
		{"a.", pg, "", "", "--table a.: a part is empty"},
		{".a", pg, "", "", "--table .a: a part is empty"},
		{"", pg, "", "", "--table : a part is empty"},
		{`"a.b`, pg, "", "", `--table "a.b: its quote " is not closed`},
	} {
		schema, table, err := sink.SplitTable(c.name, c.quotes)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("SplitTable(%s, %s) = %q, %q, %v; want the error %q…", c.name, c.quotes, schema, table, err, c.err)
			}
			continue
		}
		if err != nil || schema != c.schema || table != c.table {
			t.Errorf("SplitTable(%s, %s) = %q, %q, %v; want %q, %q", c.name, c.quotes, schema, table, err, c.schema, c.table)
		}
	}
}

// TestJoinTableReadsBack checks that a name JoinTable writes (the staging
// and seen tables beside a target) is read back as its parts.
func TestJoinTableReadsBack(t *testing.T) {
	t.Parallel()
	l := sink.Limits{QualifiedNames: true, NameQuotes: `"`}
	for _, schema := range []string{"", "sales", "a.b", `say "hi".x`} {
		name := l.JoinTable(schema, "_idemport_stage_1f")
		s, tb, err := l.SplitTable(name)
		if err != nil || s != schema || tb != "_idemport_stage_1f" {
			t.Errorf("JoinTable(%q) = %s, read back as %q, %q, %v", schema, name, s, tb, err)
		}
	}
	if s, tb, err := (sink.Limits{}).SplitTable("a.b.c"); err != nil || s != "" || tb != "a.b.c" {
		t.Errorf("unqualified names: %q, %q, %v; want the name whole", s, tb, err)
	}
}
