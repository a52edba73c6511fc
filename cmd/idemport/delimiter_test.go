package main

import "testing"

// TestParseDelimiter: --delimiter takes one ASCII character other than a
// quote or a line end (\t and tab name the tab), and refuses anything
// else as its message says, a lone byte past ASCII included: the CSV
// splitter tells a row clean from its ASCII bytes, and a delimiter past
// ASCII would split a character of the text in two.
func TestParseDelimiter(t *testing.T) {
	for _, c := range []struct {
		given string
		want  byte // 0: refused
	}{
		{";", ';'}, {"|", '|'}, {`\t`, '\t'}, {"tab", '\t'}, {",", ','},
		{`"`, 0}, {"\n", 0}, {"\r", 0}, {"", 0}, {";;", 0}, {"§", 0}, {"\xa7", 0}, {"\x80", 0}, {"\xff", 0},
	} {
		got, err := parseDelimiter(c.given)
		if c.want == 0 {
			if err == nil {
				t.Errorf("--delimiter %q: %q, want it refused", c.given, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("--delimiter %q: %q, %v; want %q", c.given, got, err, c.want)
		}
	}
}
