package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestTrickyValuesThroughTheBinary imports the tricky values, CSV and JSONL,
// with the real binary, and compares every stored value with the file's as
// text; then a later file's 02134 into the integer column the first made
// is refused (exit 5) saying why, and nothing of it is written.
func TestTrickyValuesThroughTheBinary(t *testing.T) {
	t.Parallel()
	csv, jsonl, cols := testkit.Tricky()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		for file, content := range map[string]string{"tricky.csv": csv, "tricky.jsonl": jsonl} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			table := strings.ReplaceAll(file, ".", "_")
			r := importTo(t, tg, dir, nil, 0, "--table", table, "--key", "id", file)
			if r.Rows.Inserted != int64(len(cols[0].Want)) {
				t.Fatalf("%s: %+v", file, r)
			}
			check := cols
			if strings.HasSuffix(file, ".jsonl") {
				check = append(check[:len(check):len(check)], testkit.TrickyJSON)
			}
			for _, c := range check {
				testkit.CheckTricky(t, tg.DB, name, table, "id", c)
			}
		}

		os.WriteFile(filepath.Join(dir, "zips1.csv"), []byte("zip\n2134\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "zips2.csv"), []byte("zip\n02134\n"), 0o644)
		importTo(t, tg, dir, nil, 0, "--table", "zips", "zips1.csv")
		run := tg.Exec(t, dir, nil, "import", "--table", "zips", "zips2.csv")
		if run.Code != 5 || !strings.Contains(run.Stdout+run.Stderr, "leading zeros would be lost") ||
			!strings.Contains(run.Stdout+run.Stderr, "--column zip:string") {
			t.Fatalf("02134 into an integer column: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		testkit.CheckTricky(t, tg.DB, name, "zips", "zip", testkit.TrickyColumn{Name: "zip", Want: []string{"2134"}})
	})
}

// TestShortNumberFormsThroughTheBinary imports the short forms of
// testkit.ZeroForms (0, 00, 07, -07, +7, -0, 0.0, 00.5) with the real
// binary, as CSV text, as JSON strings and bare in JSONL: a column of each
// form alone is inferred as the contract says and holds the form; into
// existing int64, decimal and float64 columns the file is refused (exit 5)
// naming its bad rows and writing nothing, and with --max-rejects the bad
// rows are quarantined and every other form lands as its value; and all of
// them as the keys of existing int64 and decimal keys holding 0, 1 and 7:
// 07 and -07 are bad rows, never 7 or -7, +7 updates 7, and 0, -0 and
// 0.0 (where the column takes it) are one key, the last of them winning.
func TestShortNumberFormsThroughTheBinary(t *testing.T) {
	t.Parallel()
	forms := testkit.ZeroForms()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		for _, as := range []string{testkit.AsCSV, testkit.AsString, testkit.AsNumber} {
			t.Run(as, func(t *testing.T) {
				t.Run("inferred", func(t *testing.T) {
					cols, row := []string{"k"}, []string{"1"}
					for i, z := range forms {
						if as != testkit.AsNumber || z.Number {
							cols, row = append(cols, fmt.Sprintf("f%d", i)), append(row, z.Field(as))
						}
					}
					table := "inferred_" + as
					file := writeForms(t, dir, as, table, cols, [][]string{row})
					if r := importTo(t, tg, dir, nil, 0, "--table", table, file); r.Rows.Inserted != 1 {
						t.Fatalf("import: %+v", r)
					}
					for i, z := range forms {
						if as == testkit.AsNumber && !z.Number {
							continue
						}
						col, typ := fmt.Sprintf("f%d", i), z.Inferred(as, false)
						if got := tg.ColumnType(t, table, col); got != typ {
							t.Errorf("%s alone makes a column of %s, want %s", z.Text, got, typ)
						} else if got, want := tg.Texts(t, table, col, typ, "1 = 1", "k"), z.Want(name, typ, as); !slices.Equal(got, []string{want}) {
							t.Errorf("%s in its new %s column: stored %q, want %q", z.Text, typ, got, want)
						}
					}
				})
				for _, typ := range []string{"int64", "decimal", "float64"} {
					t.Run(typ, func(t *testing.T) {
						table := "into_" + as + "_" + typ
						os.WriteFile(filepath.Join(dir, table+"_base.csv"), []byte("k,v\n0,1\n"), 0o644)
						importTo(t, tg, dir, nil, 0, "--table", table, "--column", "v:"+typ, table+"_base.csv")
						var rows [][]string
						var bad, good []string
						for i, z := range forms {
							rows = append(rows, []string{fmt.Sprint(i + 1), z.Field(as)})
							if w := z.Want(name, typ, as); strings.HasPrefix(w, "!") {
								bad = append(bad, fmt.Sprintf("%d:%s", i+1, w[1:]))
							} else {
								good = append(good, w)
							}
						}
						file := writeForms(t, dir, as, table, []string{"k", "v"}, rows)
						first := strings.SplitN(bad[0], ":", 2)[0]
						run := tg.Exec(t, dir, nil, "import", "--table", table, file)
						if run.Code != 5 || !strings.Contains(run.Stdout, fmt.Sprintf("refused: %d of %d rows are bad", len(bad), len(forms))) ||
							!strings.Contains(run.Stdout, fmt.Sprintf(`row %s column "v"`, first)) {
							t.Fatalf("without --max-rejects: exit %d, want 5 naming %d bad rows, the first row %s\n%s%s", run.Code, len(bad), first, run.Stdout, run.Stderr)
						}
						if got := tg.Texts(t, table, "v", typ, "k > 0", "k"); len(got) != 0 {
							t.Fatalf("the refused file wrote %q", got)
						}
						r := importTo(t, tg, dir, nil, 0, "--table", table, "--max-rejects", fmt.Sprint(len(bad)), file)
						if r.Rows.Inserted != int64(len(good)) || r.Rows.Rejected != int64(len(bad)) {
							t.Fatalf("with --max-rejects %d: %+v", len(bad), r.Rows)
						}
						if got := tg.Texts(t, table, "v", typ, "k > 0", "k"); !slices.Equal(got, good) {
							t.Fatalf("stored %q, want %q", got, good)
						}
						if got := quarantined(t, tg, dir, table, file); !slices.Equal(got, bad) {
							t.Fatalf("quarantined %v, want %v", got, bad)
						}
					})
				}
				for _, typ := range []string{"int64", "decimal"} {
					t.Run(typ+"-key", func(t *testing.T) {
						table := "key_" + as + "_" + typ
						os.WriteFile(filepath.Join(dir, table+"_base.csv"), []byte("id,v\n0,zero\n1,one\n7,seven\n"), 0o644)
						importTo(t, tg, dir, nil, 0, "--table", table, "--key", "id", "--column", "id:"+typ, table+"_base.csv")
						type row struct{ id, v string }
						want := map[string]row{"0": {"0", "zero"}, "1": {"1", "one"}, "7": {"7", "seven"}} // by testkit.KeyOf
						var rows [][]string
						var bad []string
						good, keys := 0, map[string]bool{}
						for i, z := range forms {
							v := fmt.Sprintf("form %d", i+1)
							rows = append(rows, []string{z.Field(as), strconv.Quote(v)})
							if w := z.Want(name, typ, as); strings.HasPrefix(w, "!") {
								bad = append(bad, fmt.Sprintf("%d:%s", i+1, w[1:]))
							} else {
								// The last occurrence of a key wins, and its text with it.
								want[testkit.KeyOf(typ, w)] = row{w, v}
								keys[testkit.KeyOf(typ, w)] = true
								good++
							}
						}
						file := writeForms(t, dir, as, table, []string{"id", "v"}, rows)
						r := importTo(t, tg, dir, nil, 0, "--table", table, "--key", "id", "--max-rejects", fmt.Sprint(len(bad)), file)
						if written := int64(len(keys)); r.Rows.Inserted != 0 || r.Rows.Updated != written || r.Rows.Superseded != int64(good)-written || r.Rows.Rejected != int64(len(bad)) {
							t.Fatalf("import: %+v, want %d keys updated, %d rows superseded and %d bad", r.Rows, written, int64(good)-written, len(bad))
						}
						ids, vs := tg.Texts(t, table, "id", typ, "1 = 1", "v"), tg.Texts(t, table, "v", "string", "1 = 1", "v")
						got := map[string]row{}
						for i := range ids {
							got[testkit.KeyOf(typ, ids[i])] = row{ids[i], vs[i]}
						}
						if !maps.Equal(got, want) || len(ids) != len(want) {
							t.Fatalf("the table holds %v, want %v", got, want)
						}
						if got := quarantined(t, tg, dir, table, file); !slices.Equal(got, bad) {
							t.Fatalf("quarantined %v, want %v", got, bad)
						}
					})
				}
			})
		}
	})
}

// writeForms writes rows (fields in the file's syntax) under the header
// cols, as CSV (as is AsCSV) or as JSONL objects, to dir/name.csv or
// name.jsonl, and returns the file's name.
func writeForms(t *testing.T, dir, as, name string, cols []string, rows [][]string) string {
	t.Helper()
	var b strings.Builder
	if as == testkit.AsCSV {
		name += ".csv"
		b.WriteString(strings.Join(cols, ",") + "\n")
		for _, r := range rows {
			b.WriteString(strings.Join(r, ",") + "\n")
		}
	} else {
		name += ".jsonl"
		for _, r := range rows {
			var fields []string
			for i, c := range cols {
				fields = append(fields, strconv.Quote(c)+": "+r[i])
			}
			b.WriteString("{" + strings.Join(fields, ", ") + "}\n")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// quarantined returns "ordinal:code" of each bad row of file that
// 'rejects list' shows for table, in order.
func quarantined(t *testing.T, tg *testkit.Target, dir, table, file string) []string {
	t.Helper()
	r := tg.Exec(t, dir, nil, "rejects", "list", "--output", "json", "--table", table, file)
	if r.Code != 0 {
		t.Fatalf("rejects list: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var rejects []struct {
		Ordinal int64
		Code    string
	}
	if err := decodeLines(r.Stdout, &rejects); err != nil {
		t.Fatalf("rejects list: %v\n%s", err, r.Stdout)
	}
	var out []string
	for _, rj := range rejects {
		out = append(out, fmt.Sprintf("%d:%s", rj.Ordinal, rj.Code))
	}
	return out
}
