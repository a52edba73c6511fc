package sink_test

import (
	"testing"

	"github.com/idemport/idemport/sink"
)

// TestJoinTableReadsBackEveryName checks that JoinTable writes any
// schema and table, each part holding dots and quotes or not, as
// SplitTable reads back exactly those parts, with PostgreSQL's quotes and
// MariaDB's; and that a name of an unqualified driver is the table alone.
// The table part was left unquoted, so a"b" in s read back as s.ab.
func TestJoinTableReadsBackEveryName(t *testing.T) {
	t.Parallel()
	parts := []string{"items", "a.b", `a"b"`, `_idemport_stage_1f"2e"`, `x"."y`, "`t`", `"`, ".", "UPPER.case"}
	for _, quotes := range []string{`"`, "\"`"} {
		l := sink.Limits{QualifiedNames: true, NameQuotes: quotes}
		for _, schema := range append([]string{""}, parts...) {
			for _, table := range parts {
				name := l.JoinTable(schema, table)
				s, tb, err := l.SplitTable(name)
				if err != nil || s != schema || tb != table {
					t.Errorf("quotes %s: JoinTable(%q, %q) = %s, read back as %q, %q, %v", quotes, schema, table, name, s, tb, err)
				}
			}
		}
	}
	if name := (sink.Limits{}).JoinTable("", `a"b.c`); name != `a"b.c` {
		t.Errorf("unqualified names: %s, want the table whole", name)
	}
}
