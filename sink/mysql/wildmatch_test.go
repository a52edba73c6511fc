package mysql

import (
	"strings"
	"testing"
)

// TestWildMatch checks the grant pattern matcher against the server's rules
// (% any run, _ any one, \ the next character itself, case by
// lower_case_table_names), and that a pattern of many % is matched in time
// proportional to the pattern and name, not exponential in the %s.
func TestWildMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, database string
		fold, want        bool
	}{
		{"shop", "shop", false, true},
		{"shop", "Shop", false, false},
		{"shop", "Shop", true, true},
		{"sh%", "shop", false, true},
		{"sh%", "sh", false, true},
		{"%", "", false, true},
		{"s_op", "shop", false, true},
		{"s_op", "sop", false, false},
		{`s\_op`, "s_op", false, true},
		{`s\_op`, "shop", false, false},
		{`a\%`, "a%", false, true},
		{`a\%`, "ab", false, false},
		{"%a%b", "xaxb", false, true},
		{"%a%b", "xbxa", false, false},
		{"%%", "anything", false, true},
		{strings.Repeat("%a", 12) + "%b", strings.Repeat("a", 64), false, false},
		{strings.Repeat("%a", 12) + "%b", strings.Repeat("a", 63) + "b", false, true},
		{strings.Repeat("%_", 30), strings.Repeat("x", 29), false, false},
	} {
		if got := wildMatch(c.pattern, c.database, c.fold); got != c.want {
			t.Errorf("wildMatch(%q, %q, fold %v) = %v, want %v", c.pattern, c.database, c.fold, got, c.want)
		}
	}
}

// TestParseGrantColumns checks that a grant of columns, whose quoted column
// names may hold " ON ", is never read as a grant on a database.
func TestParseGrantColumns(t *testing.T) {
	for _, line := range []string{
		"GRANT SELECT (`c ON `x`.* TO `) ON `d`.`t` TO `r`",
		"GRANT SELECT (\"c ON \"x\".* TO \") ON \"d\".\"t\" TO \"r\"",
		"GRANT INSERT (`a`) ON `d`.`t` TO `r`",
	} {
		if on, privs, ok := parseGrant(line); ok {
			t.Errorf("parseGrant(%q) = %q %q, a database's grant; want none", line, on, privs)
		}
	}
	on, privs, ok := parseGrant("GRANT SELECT, INSERT ON `shop\\_x`.* TO `r`")
	if !ok || on != `shop\_x` || strings.Join(privs, ",") != "SELECT,INSERT" {
		t.Errorf("a database's grant read as %q %q %v", on, privs, ok)
	}
}
