package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestServerNamesAreTheRuns checks that every schema, database and table
// a run makes on PostgreSQL or MariaDB ends in its tag, in the commands it
// times and prints as in the SQL it runs before them, so that two runs on
// one server at once (each with its own tag, random by default) never
// drop or fill each other's.
func TestServerNamesAreTheRuns(t *testing.T) {
	a, b := randomTag(), randomTag()
	if a == b || checkTag(a) != nil || checkTag(b) != nil {
		t.Fatalf("two runs' tags %q and %q: want two different valid tags", a, b)
	}
	for _, bad := range []string{"", "A", "x-y", "x;drop", "t t", strings.Repeat("x", 21)} {
		if checkTag(bad) == nil {
			t.Errorf("-tag %q taken", bad)
		}
	}
	named := regexp.MustCompile(`\b(idemport_bench\w*|bench_(copy|load|anchor)\w*)`)
	for _, tag := range []string{"t1", a} {
		e := &env{tag: tag, idemport: "/bin/idemport", anchor: "/bin/anchor", csv: "/data/orders.csv"}
		var ran []string
		p := pgTarget{e: e, dsn: "postgres://u@h/db", sql: func(s string) error { ran = append(ran, s); return nil }}
		p.reset()
		p.resetCopy()
		p.drop()
		base, run := e.pgDeltaDatabases()
		m := e.maria("mysql://root@h:3306/test")
		texts := append(ran, strings.Join(p.importArgs("x.csv"), " "), strings.Join(p.copyArgs(e.csv), " "),
			strings.Join(p.pgxArgs("pgx-copy", e.csv), " "), base, run,
			m.dsn, m.recreate(), m.loadTable(), strings.Join(m.loadArgs(e.csv), " "), m.base())
		found := 0
		for _, text := range texts {
			for _, name := range named.FindAllString(text, -1) {
				found++
				if !strings.HasSuffix(name, "_"+tag) && name != "bench_load" && name != "bench_anchor_stage" {
					t.Errorf("tag %s: %q names %s, not the run's own", tag, text, name)
				}
			}
		}
		if found < 15 {
			t.Errorf("tag %s: %d names found in %q", tag, found, texts)
		}
		for _, want := range []string{
			"--state-schema idemport_bench_state_" + tag + " --table idemport_bench_" + tag + ".orders",
			`\copy bench_copy_` + tag + ` FROM`,
			"/bin/anchor pgx-copy postgres://u@h/db /data/orders.csv bench_anchor_" + tag,
		} {
			if !strings.Contains(strings.Join(texts, "\n"), want) {
				t.Errorf("tag %s: %q missing from %q", tag, want, texts)
			}
		}
		if m.dsn != "mysql://root@h:3306/idemport_bench_"+tag {
			t.Errorf("tag %s: MariaDB URL %s", tag, m.dsn)
		}
	}
}
