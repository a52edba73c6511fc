package main

// Numeric key columns compare by numeric value on every database: 1.5 and
// 1.50 (or 1 and 1.0, -0 and 0.00) are one key. Within a file the last
// occurrence wins and the earlier are counted superseded; across files the
// later file's row updates the stored one; the text stored is always the
// winning row's. Snapshot sweeps, a widen of a key column and verify
// follow the same rule.

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// sortedRows returns every row of query as text, sorted, so that targets
// that order numbers differently compare alike.
func sortedRows(t *testing.T, tg *testkit.Target, query string) [][]any {
	t.Helper()
	rows := testkit.Query(t, tg.DB, query)
	sort.Slice(rows, func(i, j int) bool {
		for k := range rows[i] {
			a, b := rows[i][k].(string), rows[j][k].(string)
			if a != b {
				return a < b
			}
		}
		return false
	})
	return rows
}

// writeFile writes content to dir/name.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDecimalKeysCompareByValue(t *testing.T) {
	t.Parallel()
	// a.csv: 24 rows, 11 of them superseded by a later row with a key
	// equal in value: 1.5 and 1.50 by the last 1.50, 1 by 1.0, -0 by 0.00, 10 by 10.0, an int64
	// edge by its decimal form, 25 by 2.50e1 (stored as its canonical
	// text, 25.0), a long decimal by the same with one more zero, -3.10 by
	// -3.1, 7.0 by 7. Keys that only look alike stay apart: 1, 10 and 100;
	// 7 and 7.001; two long decimals differing in their last digit.
	a := "id,v\n" +
		"1.5,a\n1.50,b\n1,c\n1.0,d\n-0,e\n0.00,f\n2.000,g\n10,h\n10.0,i\n100,j\n" +
		"9223372036854775807,k\n9223372036854775807.0,l\n25,m\n2.50e1,n\n" +
		"0.1000000000000000000000000000001,o\n0.10000000000000000000000000000010,p\n0.1000000000000000000000000000002,q\n" +
		"-3.10,r\n-3.1,s\n7.0,t\n7,u\n7.001,w\n1.5,x\n1.50,y\n"
	wantA := [][]any{
		{"-3.1", "s"}, {"0.00", "f"}, {"0.10000000000000000000000000000010", "p"}, {"0.1000000000000000000000000000002", "q"},
		{"1.0", "d"}, {"1.50", "y"}, {"10.0", "i"}, {"100", "j"}, {"2.000", "g"}, {"25.0", "n"},
		{"7", "u"}, {"7.001", "w"}, {"9223372036854775807.0", "l"},
	}
	const supersededA = 11 // 1.5 (a, x), 1.50 (b), 1, -0, 10, the int64 edge, 25, the long decimal, -3.10, 7.0
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		table := func(name string) [][]any {
			t.Helper()
			return sortedRows(t, tg, `SELECT `+tg.Text("id")+`, v FROM `+name)
		}
		writeFile(t, dir, "a.csv", a)
		first := importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "--partition-rows", "5", "a.csv")
		if first.Outcome != "imported" || first.Rows.Read != 24 || first.Rows.Superseded != supersededA || first.Rows.Inserted != 24-supersededA {
			t.Fatalf("a.csv: %+v", first)
		}
		if got := table("t"); !reflect.DeepEqual(got, wantA) {
			t.Fatalf("after a.csv, table t:\n got  %v\n want %v", got, wantA)
		}
		checkOperationCounts(t, tg, first.FileID, 24, supersededA)
		again := importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "--partition-rows", "5", "a.csv")
		if again.Outcome != "duplicate" {
			t.Fatalf("rerun of a.csv: %+v", again)
		}
		if got := table("t"); !reflect.DeepEqual(got, wantA) {
			t.Fatalf("after the rerun, table t:\n got  %v\n want %v", got, wantA)
		}

		// b.csv, a second file: its keys equal in value to stored ones
		// update those rows, their text now b.csv's, even where nothing
		// else changes (100.00); a key written exactly as stored with the
		// same value is unchanged.
		writeFile(t, dir, "b.csv", "id,v\n1.500,b1\n1,b2\n0,b3\n100.00,j\n2.000,g\n3,b4\n")
		b := importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "b.csv")
		if b.Rows.Inserted != 1 || b.Rows.Updated != 4 || b.Rows.Unchanged != 1 || b.Rows.Superseded != 0 {
			t.Fatalf("b.csv: %+v", b.Rows)
		}
		wantB := [][]any{
			{"-3.1", "s"}, {"0", "b3"}, {"0.10000000000000000000000000000010", "p"}, {"0.1000000000000000000000000000002", "q"},
			{"1", "b2"}, {"1.500", "b1"}, {"10.0", "i"}, {"100.00", "j"}, {"2.000", "g"}, {"25.0", "n"},
			{"3", "b4"}, {"7", "u"}, {"7.001", "w"}, {"9223372036854775807.0", "l"},
		}
		if got := table("t"); !reflect.DeepEqual(got, wantB) {
			t.Fatalf("after b.csv, table t:\n got  %v\n want %v", got, wantB)
		}
		if again := importTo(t, tg, dir, nil, 0, "--table", "t", "--key", "id", "b.csv"); again.Outcome != "duplicate" {
			t.Fatalf("rerun of b.csv: %+v", again)
		}
		// verify finds every key of a.csv, though b.csv rewrote the text
		// of five of them: 13 rows applied, 13 present.
		ver := tg.Exec(t, dir, nil, "verify", "--table", "t", "--key", "id", "a.csv")
		if ver.Code != 0 || !strings.Contains(ver.Stdout, "holds all 13 rows") {
			t.Fatalf("verify a.csv: exit %d\n%s%s", ver.Code, ver.Stdout, ver.Stderr)
		}

		// A snapshot with a version column: 1.5 at an older version than
		// the stored 1.500 is stale and not applied, so the table keeps
		// the text 1.500; the key is in the file all the same, and the
		// sweep keeps its row. 2.0 is applied (its text now 2.0). Only
		// 7.001, missing from the file, is deleted.
		writeFile(t, dir, "s1.csv", "id,ver,v\n1.500,2,s1\n2,1,s2\n7,1,s3\n7.001,1,s4\n")
		importTo(t, tg, dir, nil, 0, "--table", "s", "--key", "id", "--version-col", "ver", "s1.csv")
		writeFile(t, dir, "s2.csv", "id,ver,v\n1.5,1,old\n2.0,1,s2\n7.00,1,s3\n")
		s := importTo(t, tg, dir, nil, 0, "--table", "s", "--key", "id", "--version-col", "ver", "--snapshot", "--max-delete", "50%", "s2.csv")
		if s.Deleted != 1 || s.Rows.Stale != 1 || s.Rows.Updated != 2 {
			t.Fatalf("snapshot s2.csv: deleted %d, rows %+v", s.Deleted, s.Rows)
		}
		wantS := [][]any{{"1.500", "2", "s1"}, {"2.0", "1", "s2"}, {"7.00", "1", "s3"}}
		if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+`, `+tg.Text("ver")+`, v FROM s`); !reflect.DeepEqual(got, wantS) {
			t.Fatalf("after the snapshot, table s:\n got  %v\n want %v", got, wantS)
		}
		if again := importTo(t, tg, dir, nil, 0, "--table", "s", "--key", "id", "--version-col", "ver", "--snapshot", "--max-delete", "50%", "s2.csv"); again.Outcome != "duplicate" {
			t.Fatalf("rerun of the snapshot: %+v", again)
		}

		// The same with --atomic: the staged keys are the snapshot's key
		// set, and the move and the sweep compare by value too.
		writeFile(t, dir, "s3.csv", "id,ver,v\n1.50,1,old\n2.00,1,s2\n")
		s3 := importTo(t, tg, dir, nil, 0, "--table", "s", "--key", "id", "--version-col", "ver", "--snapshot", "--atomic", "--max-delete", "50%", "s3.csv")
		if s3.Deleted != 1 || s3.Rows.Stale != 1 || s3.Rows.Updated != 1 {
			t.Fatalf("atomic snapshot s3.csv: deleted %d, rows %+v", s3.Deleted, s3.Rows)
		}
		wantS3 := [][]any{{"1.500", "2", "s1"}, {"2.00", "1", "s2"}}
		if got := sortedRows(t, tg, `SELECT `+tg.Text("id")+`, `+tg.Text("ver")+`, v FROM s`); !reflect.DeepEqual(got, wantS3) {
			t.Fatalf("after the atomic snapshot, table s:\n got  %v\n want %v", got, wantS3)
		}

		// A widen of an int64 key column to decimal: the stored 1 and the
		// file's 1.0 are one key.
		writeFile(t, dir, "w1.csv", "id,v\n1,a\n2,b\n")
		importTo(t, tg, dir, nil, 0, "--table", "w", "--key", "id", "w1.csv")
		writeFile(t, dir, "w2.csv", "id,v\n1.0,c\n2.5,d\n")
		if tg.IsMariaDB() {
			// MariaDB tables cannot widen a key column: the file is
			// refused by the plan, before any effect, saying which column
			// and why and pointing at another table (not at --evolve
			// widen, which could not help), and so is every rerun.
			stuck := `SELECT count(*) FROM ` + tg.Ledger("operations") + ` WHERE state IN ('processing', 'failed')`
			for _, args := range [][]string{{"--evolve", "widen"}, {"--evolve", "widen"}, {}} {
				r := importTo(t, tg, dir, nil, exitRefused, append([]string{"--table", "w", "--key", "id", "w2.csv"}, args...)...)
				if strings.Contains(r.Error+r.Next, "--evolve widen") {
					t.Fatalf("widen of a key on MariaDB %v proposes --evolve widen: %+v", args, r)
				}
				if len(args) > 0 && (!strings.Contains(r.Error, `"id"`) || !strings.Contains(r.Error, "part of a key") || !strings.Contains(r.Error, "(--table NAME)")) {
					t.Fatalf("widen of a key on MariaDB %v: %+v", args, r)
				}
				if got := table("w"); !reflect.DeepEqual(got, [][]any{{"1", "a"}, {"2", "b"}}) {
					t.Fatalf("after the refused widen %v, table w: %v", args, got)
				}
				if n := testkit.Int(t, tg.DB, stuck); n != 0 {
					t.Fatalf("after the refused widen %v: %d operations processing or failed", args, n)
				}
			}
			if kind := testkit.Query(t, tg.DB, `SELECT data_type FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'w' AND column_name = 'id'`); !reflect.DeepEqual(kind, [][]any{{"bigint"}}) {
				t.Fatalf("after the refused widen, w.id is %v", kind)
			}
			other := importTo(t, tg, dir, nil, 0, "--table", "w_other", "--key", "id", "--evolve", "widen", "w2.csv")
			if other.Outcome != "imported" || other.Rows.Inserted != 2 {
				t.Fatalf("w2.csv into another table: %+v", other)
			}
			if got := table("w_other"); !reflect.DeepEqual(got, [][]any{{"1.0", "c"}, {"2.5", "d"}}) {
				t.Fatalf("table w_other: %v", got)
			}
			return
		}
		w := importTo(t, tg, dir, nil, 0, "--table", "w", "--key", "id", "--evolve", "widen", "w2.csv")
		if w.Rows.Updated != 1 || w.Rows.Inserted != 1 || len(w.ColumnsWidened) != 1 {
			t.Fatalf("widen w2.csv: %+v", w)
		}
		wantW := [][]any{{"1.0", "c"}, {"2", "b"}, {"2.5", "d"}}
		if got := table("w"); !reflect.DeepEqual(got, wantW) {
			t.Fatalf("after the widen, table w:\n got  %v\n want %v", got, wantW)
		}
		if again := importTo(t, tg, dir, nil, 0, "--table", "w", "--key", "id", "--evolve", "widen", "w2.csv"); again.Outcome != "duplicate" {
			t.Fatalf("rerun of the widen: %+v", again)
		}
		writeFile(t, dir, "w3.csv", "id,v\n1.00,e\n2.0,b\n")
		if w3 := importTo(t, tg, dir, nil, 0, "--table", "w", "--key", "id", "w3.csv"); w3.Rows.Updated != 2 || w3.Rows.Inserted != 0 {
			t.Fatalf("w3.csv: %+v", w3.Rows)
		}
		wantW3 := [][]any{{"1.00", "e"}, {"2.0", "b"}, {"2.5", "d"}}
		if got := table("w"); !reflect.DeepEqual(got, wantW3) {
			t.Fatalf("after w3.csv, table w:\n got  %v\n want %v", got, wantW3)
		}
		for _, args := range [][]string{{"w1.csv"}, {"--evolve", "widen", "w2.csv"}, {"w3.csv"}} {
			if ver := tg.Exec(t, dir, nil, append([]string{"verify", "--table", "w", "--key", "id"}, args...)...); ver.Code != 0 {
				t.Fatalf("verify %v: exit %d\n%s%s", args, ver.Code, ver.Stdout, ver.Stderr)
			}
		}
	})
}
