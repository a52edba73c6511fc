package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// pricesCSV repeats keys (id 1 three times: its last row, and its newest
// version, is not its first) and holds values at the edges: int64 limits,
// a long decimal, an empty string (quoted) and NULL (unquoted empty).
const pricesCSV = "id,ver,amount,big,note\n" +
	"1,1,1.50,9223372036854775807,first\n" +
	"2,1,2.25,-9223372036854775808,\"\"\n" +
	"1,3,3.10,0,newest\n" +
	"3,1,0.000000000000000000012345678901234567890,5,\n" +
	"1,2,4.00,1,last\n"

// runProposal runs a command verify proposed (idemport …) in a shell, as
// printed, in dir against tg (a PostgreSQL DSN with query values is
// proposed as "$IDEMPORT_INTO").
func runProposal(t *testing.T, tg *testkit.Target, dir, command string) {
	t.Helper()
	sh := exec.Command("sh", "-c", strings.Replace(command, "idemport", testkit.Binary(t), 1))
	sh.Dir = dir
	if tg.IsPostgres() {
		sh.Env = append(sh.Environ(), "IDEMPORT_INTO="+tg.Args[1])
	}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

var nextLine = regexp.MustCompile(`(?m)^  next: (idemport .*)$`)

// TestVerifyFindsItsImport imports a file with flags (another table, by
// key, by key and version column, a column type), then verifies it with no
// flag: verify finds the import by the file's content and checks it with
// the recorded mapping. A change behind idemport's back (a row deleted; by
// key, values updated by SQL: a decimal's scale, an empty string made
// NULL, an int64 edge) is reported row by row with a next: line that,
// run as printed, repairs the table, after which verify passes again.
func TestVerifyFindsItsImport(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"ordinal", nil},
		{"key", []string{"--key", "id"}},
		{"version", []string{"--key", "id", "--version-col", "ver"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				if err := os.WriteFile(filepath.Join(dir, "prices.csv"), []byte(pricesCSV), 0o644); err != nil {
					t.Fatal(err)
				}
				args := append([]string{"--table", "sales", "--column", "amount:decimal"}, mode.flags...)
				importTo(t, tg, dir, nil, 0, append(args, "prices.csv")...)
				v := tg.Exec(t, dir, nil, "verify", "prices.csv")
				if v.Code != 0 || !strings.Contains(v.Stdout, "prices.csv: ok: sales holds all") {
					t.Fatalf("verify without flags: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
				}
				var want []string
				if mode.flags == nil {
					if _, err := tg.DB.Exec(`DELETE FROM sales WHERE _idemport_row = 2`); err != nil {
						t.Fatal(err)
					}
					want = []string{"sales holds 4 of the file's rows, the ledger says 5"}
				} else {
					amount := "4.0" // the last row's 4.00
					if len(mode.flags) > 2 {
						amount = "3.1" // the newest version's 3.10
					}
					for _, q := range []string{`UPDATE sales SET amount = '` + amount + `' WHERE id = 1`, `UPDATE sales SET note = NULL WHERE id = 2`,
						`UPDATE sales SET big = 9223372036854775806 WHERE id = 3`} {
						if _, err := tg.DB.Exec(q); err != nil {
							t.Fatal(err)
						}
					}
					want = []string{"3 rows of sales hold values other than the file's",
						`id=1: amount is "` + amount + `", the file's is "` + amount + `0"`,
						`id=2: note is NULL, the file's is ""`,
						`id=3: big is "9223372036854775806", the file's is "5"`}
				}
				v = tg.Exec(t, dir, nil, "verify", "prices.csv")
				m := nextLine.FindStringSubmatch(v.Stdout)
				if v.Code != 1 || m == nil {
					t.Fatalf("verify after a change: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
				}
				for _, w := range want {
					if !strings.Contains(v.Stdout, w) {
						t.Errorf("verify after a change does not say %q:\n%s", w, v.Stdout)
					}
				}
				runProposal(t, tg, dir, m[1])
				if v := tg.Exec(t, dir, nil, "verify", "prices.csv"); v.Code != 0 {
					t.Fatalf("verify after %s: exit %d\n%s%s", m[1], v.Code, v.Stdout, v.Stderr)
				}
				// The flags of the import verify the same import.
				if v := tg.Exec(t, dir, nil, append([]string{"verify"}, append(args, "prices.csv")...)...); v.Code != 0 {
					t.Fatalf("verify with the import's flags: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
				}
			})
		})
	}
}

// TestVerifyListsSeveralImports imports one file into two tables (by key
// and by ordinal): verify without flags lists both, table ← file ID with
// the command that chooses each, and exits 2 as undo does; each command,
// run as printed, verifies its import (exit 0). A file the ledger has no
// import of is a difference whose next: (the import), run as printed,
// makes verify pass.
func TestVerifyListsSeveralImports(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		if err := os.WriteFile(filepath.Join(dir, "prices.csv"), []byte(pricesCSV), 0o644); err != nil {
			t.Fatal(err)
		}
		importTo(t, tg, dir, nil, 0, "--table", "by_key", "--key", "id", "prices.csv")
		importTo(t, tg, dir, nil, 0, "--table", "by_row", "prices.csv")
		v := tg.Exec(t, dir, nil, "verify", "prices.csv")
		cands := regexp.MustCompile(`(?m)^  (\w+) ← (sha256:[0-9a-f]+): (idemport verify .*)$`).FindAllStringSubmatch(v.Stdout, -1)
		if v.Code != 2 || len(cands) != 2 || !strings.Contains(v.Stdout, "matches 2 imports") {
			t.Fatalf("verify of a file in two tables: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
		}
		tables := map[string]bool{}
		for _, c := range cands {
			tables[c[1]] = true
			if !strings.Contains(c[3], "--table "+c[1]+" ") {
				t.Errorf("candidate %s proposes %s", c[1], c[3])
			}
			runProposal(t, tg, dir, c[3])
		}
		if !tables["by_key"] || !tables["by_row"] {
			t.Fatalf("candidates %v", cands)
		}
		if v := tg.Exec(t, dir, nil, "verify", "--table", "by_key", "prices.csv"); v.Code != 0 || !strings.Contains(v.Stdout, "ok: by_key holds all 3 rows") {
			t.Fatalf("verify --table by_key: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
		}

		if err := os.WriteFile(filepath.Join(dir, "new.csv"), []byte("id,x\n1,a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		v = tg.Exec(t, dir, nil, "verify", "new.csv")
		m := nextLine.FindStringSubmatch(v.Stdout)
		if v.Code != 1 || m == nil || !strings.Contains(v.Stdout, "the ledger has no import of new.csv") {
			t.Fatalf("verify of a file never imported: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
		}
		runProposal(t, tg, dir, m[1])
		if v := tg.Exec(t, dir, nil, "verify", "new.csv"); v.Code != 0 {
			t.Fatalf("verify after %s: exit %d\n%s%s", m[1], v.Code, v.Stdout, v.Stderr)
		}
	})
}
