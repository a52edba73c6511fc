package sqlite

import (
	"slices"
	"testing"
)

// TestTableChecks: the CHECKs of a CREATE TABLE statement are found, of a
// column and of the table, named or not, nested parentheses and all, and
// never inside a string literal, a quoted name or a comment.
func TestTableChecks(t *testing.T) {
	def := `CREATE TABLE "check" (
  id INTEGER PRIMARY KEY,
  qty INTEGER check(qty >= 0), -- CHECK (no) in a comment
  "CHECK (x)" TEXT DEFAULT 'CHECK (no)' /* CHECK (no) */,
  [check] TEXT CHECK ([check] <> ')' AND (length([check]) < 5)),
  CONSTRAINT pos CHECK ("CHECK (x)" <> 'it''s CHECK (no)')
)`
	want := []string{
		`qty >= 0`,
		`[check] <> ')' AND (length([check]) < 5)`,
		`"CHECK (x)" <> 'it''s CHECK (no)'`,
	}
	if got := tableChecks(def); !slices.Equal(got, want) {
		t.Fatalf("tableChecks:\n%q\nwant\n%q", got, want)
	}
}
