package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// jsonlAgainstCSV is a file of strings that put a quote, a backslash, a
// control character, a NUL escape or a multi-byte character at every place
// of runs around eight bytes long, with numbers beside them, as CSV and as
// JSONL written several ways (keys in and out of order, escaped and raw
// text, spaces), and the values each good row must store.
func jsonlAgainstCSV() (csv, jsonl string, want [][]string, bad int) {
	specials := []string{`"`, `\`, "\n", "\t", "\x01", "\x1f", "é", "中", "😀", "\u2028", "/", " "}
	var c, j strings.Builder
	c.WriteString("id,s,q,f\n")
	id := 0
	add := func(s string, q int64, f string, jsonForm func(k, v []byte) string) {
		id++
		fmt.Fprintf(&c, "%d,\"%s\",%d,%s\n", id, strings.ReplaceAll(s, `"`, `""`), q, f)
		k, _ := json.Marshal(s)
		j.WriteString(jsonForm([]byte(fmt.Sprint(id)), k))
		want = append(want, []string{fmt.Sprint(id), s, fmt.Sprint(q), f})
	}
	for n := 0; n <= 18; n++ {
		for at := 0; at <= n; at++ {
			for k, sp := range specials {
				s := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				q := int64(n*1000+at) * int64(1-2*(k%2))
				f := []string{"0.5", "-2.25", "1e3", "2.5e-3", "1E+2", "-0.125"}[(n+at+k)%6]
				switch (n + at + k) % 4 {
				case 0: // in order, as encoding/json writes
					add(s, q, f, func(id, v []byte) string {
						return fmt.Sprintf(`{"id":%s,"s":%s,"q":%d,"f":%s}`+"\n", id, v, q, f)
					})
				case 1: // out of order, with spaces
					add(s, q, f, func(id, v []byte) string {
						return fmt.Sprintf(`{ "f" : %s , "q":%d, "s" :%s,"id":%s }`+"\r\n", f, q, v, id)
					})
				case 2: // every non-ASCII character and / as a \u escape
					add(s, q, f, func(id, v []byte) string {
						var e strings.Builder
						for _, r := range string(v) {
							switch {
							case r > 0xffff:
								r1, r2 := (r-0x10000)>>10+0xd800, (r-0x10000)&0x3ff+0xdc00
								fmt.Fprintf(&e, `\u%04x\u%04X`, r1, r2)
							case r >= 0x80 || r == '/':
								fmt.Fprintf(&e, `\u%04x`, r)
							default:
								e.WriteRune(r)
							}
						}
						return fmt.Sprintf(`{"id":%s,"s":%s,"q":%d,"f":%s}`+"\n", id, e.String(), q, f)
					})
				default: // reversed, tabs between tokens
					add(s, q, f, func(id, v []byte) string {
						return fmt.Sprintf("{\t\"f\":%s,\t\"s\":%s,\"q\"\t:%d,\"id\":%s}\n", f, v, q, id)
					})
				}
			}
		}
	}
	// Bad rows, in both files: a NUL (raw in CSV, an escape in JSONL, where
	// the line's bytes have none) and invalid UTF-8.
	for _, s := range []string{"nul\x00here", "\x00", "bad\xffutf8", "\xc3("} {
		id++
		fmt.Fprintf(&c, "%d,\"%s\",1,0.5\n", id, s)
		v := strings.ReplaceAll(s, "\x00", `\u0000`)
		fmt.Fprintf(&j, `{"id":%d,"s":"%s","q":1,"f":0.5}`+"\n", id, v)
		bad++
	}
	return c.String(), j.String(), want, bad
}

// TestJSONLMatchesCSV imports the same rows as CSV and as JSONL and
// compares both tables, value by value, with the rows the file holds: every
// string, escaped or not, lands exactly; both refuse the same bad rows.
func TestJSONLMatchesCSV(t *testing.T) {
	t.Parallel()
	csv, jsonl, want, bad := jsonlAgainstCSV()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := openValues(t, name)
		for _, file := range []struct{ name, content string }{{"same.csv", csv}, {"same.jsonl", jsonl}} {
			table := "jvc_" + strings.ReplaceAll(file.name, ".", "_")
			res := f.importText(t, file.name, file.content, Request{Mapping: Mapping{Table: table}, MaxRejects: RejectLimit{Count: int64(bad)}})
			wantImported(t, res, int64(len(want)))
			if res.Rows.Rejected != int64(bad) {
				t.Fatalf("%s: %d rows rejected, want %d", file.name, res.Rows.Rejected, bad)
			}
			cast := func(c string) string { return f.tg.Text(`"` + c + `"`) }
			// f is read as a float64: the two databases print floats apart.
			rows, err := f.tg.DB.Query(`SELECT ` + cast("id") + `, "s", ` + cast("q") + `, "f" FROM "` + table + `" ORDER BY "` + table + `"."id"`)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for rows.Next() {
				r := make([]string, 4)
				var fl float64
				if err := rows.Scan(&r[0], &r[1], &r[2], &fl); err != nil {
					t.Fatal(err)
				}
				r[3] = strconv.FormatFloat(fl, 'g', -1, 64)
				got = append(got, r)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d rows, want %d", file.name, len(got), len(want))
			}
			for i := range want {
				w := slices.Clone(want[i])
				fl, err := strconv.ParseFloat(w[3], 64)
				if err != nil {
					t.Fatal(err)
				}
				w[3] = strconv.FormatFloat(fl, 'g', -1, 64)
				if !slices.Equal(got[i], w) {
					t.Fatalf("%s row %d: %q, want %q", file.name, i+1, got[i], w)
				}
			}
		}
	})
}
