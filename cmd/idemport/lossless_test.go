package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/internal/testkit"
)

// exportReplay exports the rejects of file from tg, checks the export is
// want (with FID standing for the file ID), applies fix to it and replays
// it, which must exit 0.
func exportReplay(t *testing.T, tg *testkit.Target, dir, file, fileID, want string, fix func(string) string) {
	t.Helper()
	export := tg.Exec(t, dir, nil, "rejects", "export", file)
	if want = strings.ReplaceAll(want, "FID", fileID); export.Code != 0 || export.Stdout != want {
		t.Fatalf("export: %d\n%s\nwant\n%s%s", export.Code, export.Stdout, want, export.Stderr)
	}
	fixed := filepath.Join(dir, "fix-"+file+".csv")
	if err := os.WriteFile(fixed, []byte(fix(export.Stdout)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := tg.Exec(t, dir, nil, "rejects", "replay", fixed); r.Code != 0 {
		t.Fatalf("replay: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestRejectsExportAndReplayAreLossless quarantines rows holding the values
// most easily lost — an empty string beside a null, a quoted delimiter,
// quote and line break, nested JSON objects and arrays, fields beyond the
// header, values of Parquet and Arrow IPC files — exports them, fixes only
// the bad value and replays them: the export holds exactly what the file
// said, and the target ends with exactly the source's values.
func TestRejectsExportAndReplayAreLossless(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		t.Parallel()
		t.Run("csv", func(t *testing.T) {
			dir := t.TempDir()
			tg := testkit.NewTarget(t, name, dir)
			data := "id,name,note,qty\n" +
				"1,\"\",,x\n" +
				"2,\"a,b\",plain,5,extra,\"\"\n" +
				"3,\"multi\nline\",\"quo\"\"te\",y\n" +
				"4,ok,,4\n"
			os.WriteFile(filepath.Join(dir, "items.csv"), []byte(data), 0o644)
			res := importTo(t, tg, dir, nil, 0, "--column", "qty:int64", "--max-rejects", "3", "items.csv")
			if res.Rows.Inserted != 1 || res.Rows.Rejected != 3 {
				t.Fatalf("import: %+v", res)
			}
			list := tg.Exec(t, dir, nil, "rejects", "list", "items.csv")
			if !regexpLine(list.Stdout, `^2\s+\d+\s+-\s+-\s+field_count\s+expected 4 fields, got 6`) {
				t.Fatalf("a row with too many fields is listed with a value:\n%s", list.Stdout)
			}
			want := "_idemport_table,_idemport_file_id,_idemport_row,id,name,note,qty,_idemport_extra_1,_idemport_extra_2\n" +
				"items,FID,1,1,\"\",,x,,\n" +
				"items,FID,2,2,\"a,b\",plain,5,extra,\"\"\n" +
				"items,FID,3,3,\"multi\nline\",\"quo\"\"te\",y,,\n"

			// The extra fields must be dealt with before a replay.
			export := tg.Exec(t, dir, nil, "rejects", "export", "items.csv")
			os.WriteFile(filepath.Join(dir, "extra.csv"), []byte(strings.NewReplacer(",x,", ",10,", ",y,", ",30,").Replace(export.Stdout)), 0o644)
			if r := tg.Exec(t, dir, nil, "rejects", "replay", "extra.csv"); r.Code != 5 || !strings.Contains(r.Stderr, "row 2 has a value in _idemport_extra_1") {
				t.Fatalf("replay with extra fields left in: %d %s %s", r.Code, r.Stdout, r.Stderr)
			}
			exportReplay(t, tg, dir, "items.csv", res.FileID, want, func(s string) string {
				return strings.NewReplacer(",x,", ",10,", ",y,", ",30,", ",extra,\"\"\n", ",,\n").Replace(s)
			})
			got := testkit.Query(t, tg.DB, `SELECT _idemport_row, id, name, note, qty FROM items ORDER BY _idemport_row`)
			wantRows := [][]any{{int64(1), int64(1), "", nil, int64(10)}, {int64(2), int64(2), "a,b", "plain", int64(5)},
				{int64(3), int64(3), "multi\nline", `quo"te`, int64(30)}, {int64(4), int64(4), "ok", nil, int64(4)}}
			if !reflect.DeepEqual(got, wantRows) {
				t.Fatalf("target after replay:\n got  %#v\n want %#v", got, wantRows)
			}
		})

		t.Run("jsonl", func(t *testing.T) {
			dir := t.TempDir()
			tg := testkit.NewTarget(t, name, dir)
			obj, arr := `{"a":[1,2],"s":"x\"y"}`, `[1,"x",null]`
			data := `{"id":1,"o":` + obj + `,"arr":` + arr + `,"s":"","n":null,"q":"bad"}` + "\n" +
				`{"id":2,"o":{"b":1},"arr":[],"s":"t","n":null,"q":2}` + "\n"
			os.WriteFile(filepath.Join(dir, "j.jsonl"), []byte(data), 0o644)
			res := importTo(t, tg, dir, nil, 0, "--column", "q:int64", "--max-rejects", "1", "j.jsonl")
			if res.Rows.Inserted != 1 || res.Rows.Rejected != 1 {
				t.Fatalf("import: %+v", res)
			}
			want := "_idemport_table,_idemport_file_id,_idemport_row,id,o,arr,s,n,q\n" +
				`j,FID,1,1,"{""a"":[1,2],""s"":""x\""y""}","[1,""x"",null]","",,bad` + "\n"
			exportReplay(t, tg, dir, "j.jsonl", res.FileID, want, func(s string) string { return strings.Replace(s, ",bad\n", ",7\n", 1) })
			q := `SELECT json_type(o), json_type(arr), o = ?, arr = ?, s, n, q FROM j WHERE _idemport_row = 1`
			if tg.IsPostgres() {
				q = `SELECT jsonb_typeof(o), jsonb_typeof(arr), o = CAST($1 AS jsonb), arr = CAST($2 AS jsonb), s, n, q FROM j WHERE _idemport_row = 1`
			}
			got := testkit.Query(t, tg.DB, q, obj, arr)
			if len(got) != 1 {
				t.Fatalf("row 1: %v", got)
			}
			g := got[0]
			// MariaDB's JSON_TYPE names the types in capitals.
			if !strings.EqualFold(fmt.Sprint(g[0]), "object") || !strings.EqualFold(fmt.Sprint(g[1]), "array") || !truthy(g[2]) || !truthy(g[3]) || g[4] != "" || g[5] != nil || g[6] != int64(7) {
				t.Fatalf("row 1 after replay: %#v (want an object and an array equal to the source's, \"\", NULL, 7)", g)
			}
		})

		for _, format := range []string{"parquet", "arrow"} {
			t.Run(format, func(t *testing.T) {
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				file := "typed." + format
				writeTyped(t, filepath.Join(dir, file), format)
				res := importTo(t, tg, dir, nil, 0, "--max-rejects", "1", file)
				if res.Rows.Inserted != 2 || res.Rows.Rejected != 1 {
					t.Fatalf("import: %+v", res)
				}
				want := "_idemport_table,_idemport_file_id,_idemport_row,id,name,tags,amount,big\n" +
					`typed,FID,2,2,"","[""a"",""b,c""]",12.50,18446744073709551615` + "\n"
				exportReplay(t, tg, dir, file, res.FileID, want, func(s string) string {
					return strings.Replace(s, ",18446744073709551615\n", ",9223372036854775807\n", 1)
				})
				q := `SELECT _idemport_row, id, name, json_type(tags), tags = ?, amount, big FROM typed ORDER BY _idemport_row`
				if tg.IsPostgres() {
					q = `SELECT _idemport_row, id, name, jsonb_typeof(tags), tags = CAST($1 AS jsonb), amount, big FROM typed ORDER BY _idemport_row`
				}
				got := testkit.Query(t, tg.DB, q, `["a","b,c"]`)
				if len(got) != 3 {
					t.Fatalf("target: %v", got)
				}
				g := got[1]
				if g[0] != int64(2) || g[1] != int64(2) || g[2] != "" || !strings.EqualFold(fmt.Sprint(g[3]), "array") || !truthy(g[4]) || g[5] != "12.50" || g[6] != int64(math.MaxInt64) {
					t.Fatalf("row 2 after replay: %#v (want \"\", the array, 12.50, the fixed int64)", g)
				}
			})
		}
	})
}

// truthy reads an SQL boolean from either target.
func truthy(v any) bool { return v == true || v == int64(1) }

// writeTyped writes a Parquet or Arrow IPC file of three rows: id, name
// (an empty string in row 2, a null in row 3), tags (a list), amount (a
// decimal) and big (a uint64 above the int64 range in row 2, a bad row).
func writeTyped(t *testing.T, path, format string) {
	t.Helper()
	dec := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "amount", Type: dec, Nullable: true},
		{Name: "big", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, name := range []*string{ptr("one"), ptr(""), nil} {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		if name == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*name)
		}
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		for _, s := range [][]string{{"x"}, {"a", "b,c"}, {}}[i] {
			lb.ValueBuilder().(*array.StringBuilder).Append(s)
		}
		b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(1250))
		big := []uint64{1, math.MaxUint64, 3}[i]
		b.Field(4).(*array.Uint64Builder).Append(big)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if format != "parquet" {
		testkit.WriteArrowFile(t, path, rec)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
