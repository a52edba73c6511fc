package main

import "testing"

func TestEsc(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"orders.csv":               "orders.csv",
		`C:\data\orders.csv`:       `C:\data\orders.csv`,
		"été.csv":                  "été.csv",
		"a\nb":                     `a\nb`,
		"a\r\nb":                   `a\r\nb`,
		"a\tb":                     `a\tb`,
		"\x1b[2Kred":               `\x1b[2Kred`,
		"nul\x00":                  `nul\x00`,
		"del\x7f":                  `del\x7f`,
		"c1\u0085":                 `c1\u0085`,
		"invalid \x9b utf-8":       `invalid \x9b utf-8`,
		"line\u2028sep":            `line\u2028sep`,
		"right-to-left\u202eoverr": `right-to-left\u202eoverr`,
		"isolate\u2066x\u2069":     `isolate\u2066x\u2069`,
	} {
		if got := esc(in); got != want {
			t.Errorf("esc(%q) = %q, want %q", in, got, want)
		}
	}
}
