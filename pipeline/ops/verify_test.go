package ops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/pipeline"
)

// verifyFx is a target with an Engine that imports into it and the
// Operator that verifies what it imported.
type verifyFx struct {
	tg  *testkit.Target
	dir string
	e   *pipeline.Engine
	o   *Operator
}

func newVerifyFx(t *testing.T, name string) *verifyFx {
	t.Helper()
	dir := t.TempDir()
	f := &verifyFx{tg: testkit.NewTarget(t, name, dir), dir: dir}
	f.e = f.engine(t, "")
	o, err := Open(context.Background(), f.tg.Args[1], pipeline.Options{StateSchema: f.tg.Schema, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	f.o = o
	return f
}

// engine opens an Engine on the target, failing at the failpoint spec
// when it is not empty.
func (f *verifyFx) engine(t *testing.T, spec string) *pipeline.Engine {
	t.Helper()
	o := pipeline.Options{StateSchema: f.tg.Schema}
	if spec != "" {
		fp, err := failpoint.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		o.Failpoints = fp
	}
	e, err := pipeline.Open(context.Background(), f.tg.Args[1], o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func (f *verifyFx) write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (f *verifyFx) exec(t *testing.T, q string) {
	t.Helper()
	if _, err := f.tg.DB.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// verify verifies the file of req, which must not fail.
func (f *verifyFx) verify(t *testing.T, req pipeline.Request) *VerifyReport {
	t.Helper()
	rep, err := f.o.Verify(context.Background(), req)
	if err != nil {
		t.Fatalf("verify %s: %v", req.Path, err)
	}
	return rep
}

func wantOutcome(t *testing.T, res *pipeline.Result, want pipeline.Outcome) {
	t.Helper()
	if res.Outcome != want {
		t.Fatalf("import: %s, want %s (%v)", res.Outcome, want, res.Err)
	}
}

func items(n, seed int) string {
	var b strings.Builder
	b.WriteString("id,qty,name\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d,%d,item %d-%d\n", i, i*seed, i, seed)
	}
	return b.String()
}

// TestVerifyDecidesAsImport checks that verify finds a file in order
// exactly where an import of it would be a duplicate, and otherwise says
// why, from the same decision: a dropped table (an import would apply it
// again), other content (a conflict), an import that did not complete.
func TestVerifyDecidesAsImport(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newVerifyFx(t, name)
		ctx := context.Background()
		verify := func(req pipeline.Request) []string {
			t.Helper()
			return f.verify(t, req).Differences
		}
		done := pipeline.Request{Path: f.write(t, "items.csv", items(3, 1)), FileID: "day1"}
		wantOutcome(t, f.e.Import(ctx, done), pipeline.Imported)
		if d := verify(done); len(d) != 0 {
			t.Fatalf("a completed import: %v", d)
		}
		reapply := done
		reapply.Reapply = true // what an import would do with it changes nothing
		if d := verify(reapply); len(d) != 0 {
			t.Fatalf("a completed import, asked with --reapply: %v", d)
		}
		f.write(t, "other.csv", items(3, 2))
		if d := verify(pipeline.Request{Path: f.dir + "/other.csv", FileID: "day1", Mapping: pipeline.Mapping{Table: "items"}}); len(d) != 1 || !strings.Contains(d[0], "content differs") {
			t.Fatalf("other content: %v", d)
		}
		f.exec(t, `DROP TABLE items`)
		if d := verify(done); len(d) != 1 || !strings.Contains(d[0], "no longer exists") {
			t.Fatalf("a dropped table: %v", d)
		}
		failed := pipeline.Request{Path: f.write(t, "more.csv", items(4, 1)), PartitionRows: 2}
		wantOutcome(t, f.engine(t, "after-partition-commit:1:error").Import(ctx, failed), pipeline.Failed)
		if d := verify(failed); len(d) != 1 || !strings.Contains(d[0], "the import is failed, not completed") {
			t.Fatalf("a failed import: %v", d)
		}
	})
}

// TestVerifyComparesValues imports a file by key (last wins, and by a
// version column) whose keys repeat and whose values are at the edges
// (int64 limits, a long decimal, an empty string and NULL): verify finds
// it in order. Values changed behind idemport's back by SQL — a decimal's
// scale, an empty string made NULL, an integer — are each reported with
// key, column, stored and file values; rows another file wrote since are
// not. Applied again (--reapply), the file puts them back and verify is
// clean.
func TestVerifyComparesValues(t *testing.T) {
	t.Parallel()
	const file = "id,v,amount,big,note\n" +
		"1,1,1.50,9223372036854775807,x\n" +
		"2,1,2.25,-9223372036854775808,\"\"\n" +
		"1,3,3.10,0,winner\n" +
		"3,1,0.000000000000000000012345678901234567890,5,\n" +
		"1,2,4.00,1,last\n"
	for _, mode := range []struct {
		name    string
		version string
		winner  []string // id 1's row as stored: amount, big, note
	}{
		{"last wins", "", []string{"4.00", "1", "last"}},
		{"version", "v", []string{"3.10", "0", "winner"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
				f := newVerifyFx(t, name)
				ctx := context.Background()
				req := pipeline.Request{Path: f.write(t, "prices.csv", file), Mapping: pipeline.Mapping{Table: "prices", Key: []string{"id"}, Version: mode.version,
					Columns: map[string]idemtype.Type{"amount": idemtype.Decimal}}}
				wantOutcome(t, f.e.Import(ctx, req), pipeline.Imported)
				got := fmt.Sprint(testkit.Query(t, f.tg.DB, `SELECT `+f.tg.Text("amount")+`, `+f.tg.Text("big")+`, note FROM prices WHERE id = 1`))
				if want := fmt.Sprint([][]any{{mode.winner[0], mode.winner[1], mode.winner[2]}}); got != want {
					t.Fatalf("id 1 holds %s, want %s", got, want)
				}
				if rep := f.verify(t, req); len(rep.Differences) != 0 || rep.DifferingRows != 0 {
					t.Fatalf("verify after the import: %+v", rep)
				}
				// Behind idemport's back.
				short := strings.TrimSuffix(mode.winner[0], "0")
				f.exec(t, `UPDATE prices SET amount = '`+short+`' WHERE id = 1`)
				f.exec(t, `UPDATE prices SET note = NULL WHERE id = 2`)
				f.exec(t, `UPDATE prices SET big = 6 WHERE id = 3`)
				rep := f.verify(t, req)
				var diffs []string
				for _, d := range rep.Values {
					diffs = append(diffs, fmt.Sprintf("%s/%s: %s→%s", strings.Join(d.KeyValues, ","), d.Column, textOf(d.Stored), textOf(d.File)))
				}
				slices.Sort(diffs)
				want := []string{"1/amount: " + short + "→" + mode.winner[0], "2/note: NULL→", "3/big: 6→5"}
				if rep.DifferingRows != 3 || !slices.Equal(diffs, want) || !rep.Reapply || len(rep.Differences) != 1 {
					t.Fatalf("verify after changes by SQL: %d rows %q, want %q; %+v", rep.DifferingRows, diffs, want, rep)
				}
				// A row another file wrote since is that file's to answer for.
				wantOutcome(t, f.e.Import(ctx, pipeline.Request{Path: f.write(t, "later.csv", "id,v,amount,big,note\n2,9,7.70,7,later\n"), Mapping: req.Mapping}), pipeline.Imported)
				if rep := f.verify(t, req); rep.DifferingRows != 2 {
					t.Fatalf("verify after another file wrote id 2: %+v", rep)
				}
				again := req
				again.Reapply = true
				wantOutcome(t, f.e.Import(ctx, again), pipeline.Imported)
				if rep := f.verify(t, req); len(rep.Differences) != 0 || rep.DifferingRows != 0 {
					t.Fatalf("verify after --reapply: %+v", rep)
				}
			})
		})
	}
}

func textOf(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// TestVerifyNaturalKeyWhateverTheTypes: verify recounts a natural-key
// import whose file, read alone, infers other types than the table's.
func TestVerifyNaturalKeyWhateverTheTypes(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newVerifyFx(t, name)
		ctx := context.Background()
		for _, tc := range []struct{ table, first, second, name string }{
			// A text key; the second file's keys alone are integers.
			{"codes", "id,v\nA1,x\nB2,y\n", "id,v\n3,c\n4,d\n", "codes2.csv"},
			// A decimal key; the second file's keys alone are integers.
			{"decs", "id,v\n9007199254740993,x\n1.5,y\n", "id,v\n3,c\n4,d\n", "decs2.csv"},
			// An integer key; the second file's keys alone are text.
			{"ints", "id,v\n1,x\n2,y\n", `{"id": "3", "v": "c"}` + "\n" + `{"id": "4", "v": "d"}` + "\n", "ints2.jsonl"},
		} {
			t.Run(tc.table, func(t *testing.T) {
				req := pipeline.Request{Path: f.write(t, tc.table+"1.csv", tc.first), Mapping: pipeline.Mapping{Table: tc.table, Key: []string{"id"}}}
				wantOutcome(t, f.e.Import(ctx, req), pipeline.Imported)
				req.Path = f.write(t, tc.name, tc.second)
				wantOutcome(t, f.e.Import(ctx, req), pipeline.Imported)
				if rep := f.verify(t, req); len(rep.Differences) != 0 || rep.Found != 2 || rep.Expected != 2 {
					t.Fatalf("verify: %+v", rep)
				}
			})
		}
	})
}

// TestVerifySpillsToSpoolDir: verify plans a keyed file again as its
// import did, and a plan pass that holds fewer key hashes than the file has
// rows spills them into Request.SpoolDir, never into the system's
// temporary directory (here a regular file, so that a spill there fails),
// and leaves nothing behind.
func TestVerifySpillsToSpoolDir(t *testing.T) {
	f := newVerifyFx(t, testkit.SQLite)
	ctx := context.Background()
	var csv strings.Builder
	csv.WriteString("id,qty,name\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&csv, "%d,%d,item %d\n", i, i, i)
	}
	for i := 1; i <= 10; i++ { // later rows of the same keys supersede these
		fmt.Fprintf(&csv, "%d,%d,item %d again\n", i, 100+i, i)
	}
	req := pipeline.Request{Path: f.write(t, "items.csv", csv.String()), Mapping: pipeline.Mapping{Table: "items", Key: []string{"id"}},
		KeysHeld: 4, SpoolDir: filepath.Join(f.dir, "spool")}
	wantOutcome(t, f.e.Import(ctx, req), pipeline.Imported)
	t.Setenv("TMPDIR", f.write(t, "not-a-dir", ""))
	if rep := f.verify(t, req); len(rep.Differences) != 0 || rep.Found != 40 {
		t.Fatalf("verify: %+v", rep)
	}
	if left, err := os.ReadDir(req.SpoolDir); err != nil || len(left) != 0 {
		t.Fatalf("left in the spool directory: %v %v", left, err)
	}
}
