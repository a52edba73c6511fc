package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// TestExpand: ${NAME} is the variable's value, $${ a literal ${, a lone
// $ stays; an unset variable or a bad name is an error.
func TestExpand(t *testing.T) {
	vars := env(map[string]string{"USER": "loader", "PASS": "p$w{d}"})
	for _, tc := range []struct {
		in, want string
		expanded bool
		err      string
	}{
		{"plain", "plain", false, ""},
		{"postgres://${USER}:${PASS}@db/x", "postgres://loader:p$w{d}@db/x", true, ""},
		{"cost $5 and $${HOME}", "cost $5 and ${HOME}", false, ""},
		{"${MISSING}", "", true, "${MISSING} is not set in the environment"},
		{"${1X}", "", false, `"1X" is not a variable's name`},
		{"${}", "", false, `"" is not a variable's name`},
	} {
		got, expanded, err := expand(tc.in, vars)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || expanded != tc.expanded {
			t.Errorf("%q: %q, %v, %v; want %q, %v", tc.in, got, expanded, err, tc.want, tc.expanded)
		}
	}
}

// TestApply: the defaults apply first and a feed's keys over them; a
// list replaces a repeatable flag's values; each mistake is an *Error at
// its place, and every one is reported.
func TestApply(t *testing.T) {
	text := "defaults:\n  table: t0\n  workers: 2\nfeeds:\n  a:\n    source: [x.csv, y.csv]\n    table: t1\n    column: [a:int64, 'b:text']\n  b:\n    source: z.csv\n    workers: two\n    nope: 1\n"
	f, err := Parse("f.yaml", []byte(text), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	flags := func() (*pflag.FlagSet, *string, *int, *[]string) {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		return fs, fs.String("table", "", ""), fs.Int("workers", 1, ""), fs.StringArray("column", []string{"default:text"}, "")
	}
	fs, table, workers, column := flags()
	if err := f.Apply(f.Feeds[0], fs); err != nil {
		t.Fatal(err)
	}
	if *table != "t1" || *workers != 2 || strings.Join(*column, " ") != "a:int64 b:text" || strings.Join(f.Feeds[0].Source, " ") != "x.csv y.csv" {
		t.Fatalf("table %q, workers %d, column %q, source %q", *table, *workers, *column, f.Feeds[0].Source)
	}
	if !fs.Changed("table") || !fs.Changed("column") || !fs.Changed("workers") {
		t.Fatal("a flag set from the file is not marked changed")
	}
	fs, _, _, _ = flags()
	err = f.Apply(f.Feeds[1], fs)
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("%v is not an *Error", e)
		}
		got = append(got, ce.Error())
	}
	want := []string{`f.yaml:11:14: feed b: workers: want an integer, got a string`, `f.yaml:12:5: feed b: unknown key "nope"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
