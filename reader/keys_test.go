package reader

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
)

// lastWins returns, from rows of key texts (nil for a bad row), the
// ordinals a later good row with the same key supersedes.
func lastWins(keys []*string) []int64 {
	last := map[string]int64{}
	for i, k := range keys {
		if k != nil {
			last[*k] = int64(i + 1)
		}
	}
	var out []int64
	for i, k := range keys {
		if k != nil && last[*k] != int64(i+1) {
			out = append(out, int64(i+1))
		}
	}
	return out
}

// supersededOf returns the ordinals the partitions of plan list.
func supersededOf(plan *Plan) []int64 {
	var out []int64
	for _, p := range plan.Partitions {
		out = append(out, p.Superseded...)
	}
	return out
}

// checkSkipped reads every partition and checks that the readers return
// exactly the good rows that are not superseded.
func checkSkipped(t *testing.T, f *File, plan *Plan, good []int64) {
	t.Helper()
	var got []int64
	var skipped int64
	for _, p := range plan.Partitions {
		pr, err := f.Partition(plan, p, 2)
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := pr.Next()
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatal(err)
				}
				break
			}
			got = append(got, b.Ordinals...)
			b.Release()
		}
		skipped += pr.Superseded()
		if err := pr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, good) {
		t.Fatalf("readers returned rows %v, want %v", got, good)
	}
	if skipped != plan.Superseded {
		t.Fatalf("readers skipped %d rows, the plan says %d", skipped, plan.Superseded)
	}
}

// TestSupersededRandom plans random CSV, TSV and JSONL files, plain and
// compressed, whose keys repeat within and across partitions, with bad
// rows among them, and compares the superseded rows with the last-wins
// rule applied to the file's rows.
func TestSupersededRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for iter := range 60 {
		n := 1 + rng.IntN(60)
		domain := 1 + rng.IntN(n+3)
		compound := rng.IntN(3) == 0
		format := []string{"csv", "tsv", "jsonl"}[iter%3]
		var b strings.Builder
		sep := ","
		if format == "tsv" {
			sep = "\t"
		}
		if format != "jsonl" {
			fmt.Fprintf(&b, "id%sgrp%sv\n", sep, sep)
		}
		keys := make([]*string, n)
		for i := range n {
			id := rng.IntN(domain)
			grp := "a"
			if compound {
				grp = []string{"a", "b"}[rng.IntN(2)]
			}
			bad := rng.IntN(8) == 0
			if !bad {
				k := fmt.Sprint(id)
				if compound {
					k += "/" + grp
				}
				keys[i] = &k
			}
			switch format {
			case "jsonl":
				if bad {
					fmt.Fprintf(&b, "[%d]\n", id) // not an object
				} else {
					fmt.Fprintf(&b, `{"id":%d,"grp":%q,"v":"r%d"}`+"\n", id, grp, i)
				}
			default:
				if bad {
					fmt.Fprintf(&b, "%d%s%s%sr%d%sextra\n", id, sep, grp, sep, i, sep)
				} else {
					fmt.Fprintf(&b, "%d%s%s%sr%d\n", id, sep, grp, sep, i)
				}
			}
		}
		name := "f." + format
		if iter%4 == 1 {
			name += ".gz"
		}
		path := filepath.Join(t.TempDir(), name)
		if strings.HasSuffix(name, ".gz") {
			writeCompressed(t, path, []byte(b.String()))
		} else {
			path = writeFile(t, name, []byte(b.String()))
		}
		key := []string{"id"}
		if compound {
			key = []string{"grp", "id"}
		}
		f, plan := scanChecked(t, path, Options{Key: key, NotNull: key}, ScanOptions{PartitionRows: int64(1 + rng.IntN(7)), KeepRejects: n})
		want := lastWins(keys)
		if got := supersededOf(plan); !slices.Equal(got, want) || plan.Superseded != int64(len(want)) {
			t.Fatalf("iteration %d (%s, key %v):\n%s\nsuperseded %v (count %d), want %v", iter, name, key, b.String(), got, plan.Superseded, want)
		}
		var good []int64
		for i, k := range keys {
			if k != nil && !slices.Contains(want, int64(i+1)) {
				good = append(good, int64(i+1))
			}
		}
		checkSkipped(t, f, plan, good)
	}
}

// TestSupersededEqualValues checks that keys are compared as the values
// the target receives: the same instant written in two zones, or 1, 1.0
// and 1e0 in a decimal column (numbers compare by value, whatever scale
// their text keeps), are one key; in a text column they are two.
func TestSupersededEqualValues(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []int64
	}{
		{"timestamps", "k,v\n2026-01-01T00:00:00Z,a\n2026-01-01T01:00:00+01:00,b\n2026-01-02T00:00:00Z,c\n", []int64{1}},
		{"timestamps as text", "k,v\n2026-01-01T00:00:00Z,a\n2026-01-01T01:00:00+01:00,b\nnot a time,c\n", nil},
		{"decimals", "k,v\n1,a\n1.0,b\n2.5,c\n1e0,d\n", []int64{1, 2}},
		{"decimal scales", "k,v\n1.5,a\n1.50,b\n15e-1,c\n10,d\n10.0,e\n100,f\n1,g\n", []int64{1, 2, 4}},
		{"decimal zeros", "k,v\n-0,a\n0.00,b\n0e3,c\n-0.0,d\n0.1,e\n", []int64{1, 2, 3}},
		{"long decimals", "k,v\n0.1000000000000000000000000000001,a\n0.10000000000000000000000000000010,b\n0.1000000000000000000000000000002,c\n", []int64{1}},
		{"int64 edges", "k,v\n9223372036854775807,a\n9223372036854775807.00,b\n-9223372036854775808.0,c\n-9223372036854775808,d\n9223372036854775808,e\n", []int64{1, 3}},
		{"decimal type fixed", "k,v\n7.0,a\n7,b\n-3.10,c\n-3.1,d\n", []int64{1, 3}},
		{"numbers as text", "k,v\n1,a\n1.0,b\nx,c\n", nil},
		{"booleans", "k,v\ntrue,a\nTRUE,b\n", []int64{1}},
		{"empty and null text", "k,v\n\"\",a\nx,b\n\"\",c\n", []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "f.csv", []byte(tc.data))
			opts := Options{Key: []string{"k"}, NotNull: []string{"k"}}
			if strings.HasSuffix(tc.name, "type fixed") {
				opts.Types = map[string]idemtype.Type{"k": idemtype.Decimal}
			}
			_, plan := scanChecked(t, path, opts, ScanOptions{PartitionRows: 1})
			if got := supersededOf(plan); !slices.Equal(got, tc.want) {
				t.Fatalf("superseded %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSupersedeConfirmsCandidates gives supersede every row as a candidate,
// as if all key hashes collided: only rows whose typed keys are equal are
// superseded.
func TestSupersedeConfirmsCandidates(t *testing.T) {
	path := writeFile(t, "f.csv", []byte("a,b,v\n1,x,p\n2,x,q\n1,y,r\n1,x,s\n2,x,t\n3,z,u\n"))
	f, plan := scanChecked(t, path, Options{Key: []string{"a", "b"}, NotNull: []string{"a", "b"}}, ScanOptions{PartitionRows: 2})
	want := []int64{1, 2}
	if got := supersededOf(plan); !slices.Equal(got, want) {
		t.Fatalf("plan: superseded %v, want %v", got, want)
	}
	for i := range plan.Partitions {
		plan.Partitions[i].Superseded = nil
	}
	if err := f.supersede(context.Background(), plan, []int64{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if got := supersededOf(plan); !slices.Equal(got, want) || plan.Superseded != 2 {
		t.Fatalf("all candidates: superseded %v (count %d), want %v", got, plan.Superseded, want)
	}
}

// TestSupersededParquet checks a Parquet file keyed by an int32 and a
// string column, with repeats across row groups.
func TestSupersededParquet(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids := []int32{1, 2, 1, 3, 2, 1, 4, 2}
	ss := []string{"a", "a", "a", "a", "b", "a", "a", "a"}
	keys := make([]*string, len(ids))
	for i := range ids {
		b.Field(0).(*array.Int32Builder).Append(ids[i])
		b.Field(1).(*array.StringBuilder).Append(ss[i])
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprint(i))
		k := fmt.Sprint(ids[i], ss[i])
		keys[i] = &k
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := writeParquetRecord(t, "f.parquet", rec, 3, false)
	f, plan := scanChecked(t, path, Options{Key: []string{"id", "s"}, NotNull: []string{"id", "s"}}, ScanOptions{})
	want := lastWins(keys)
	if got := supersededOf(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("superseded %v, want %v", got, want)
	}
	var good []int64
	for i := range ids {
		if !slices.Contains(want, int64(i+1)) {
			good = append(good, int64(i+1))
		}
	}
	checkSkipped(t, f, plan, good)
}

// TestSupersededByVersion checks that with a version column the newest
// version of a key wins within the file, the later row among equal
// versions, and NULL is older than any version.
func TestSupersededByVersion(t *testing.T) {
	path := writeFile(t, "f.csv", []byte("id,ver,v\n1,5,a\n1,3,b\n1,5,c\n2,,d\n2,1,e\n3,2,f\n3,,g\n"))
	_, plan := scanChecked(t, path, Options{Key: []string{"id"}, NotNull: []string{"id"}, Version: "ver"}, ScanOptions{PartitionRows: 2})
	if got, want := supersededOf(plan), []int64{1, 2, 4, 7}; !slices.Equal(got, want) {
		t.Fatalf("superseded %v, want %v", got, want)
	}
}

// TestSupersededDecimalsRandom plans CSV and JSONL files of decimal keys
// written many ways (scales padded with zeros, exponents, -0, long
// fractions, int64 edges), inferred and fixed as decimal, and compares the
// superseded rows with the last-wins rule applied to the keys' exact
// numbers (math/big): the key is the number, whatever its text.
func TestSupersededDecimalsRandom(t *testing.T) {
	numbers := []string{"0", "1", "10", "100", "1.5", "15", "0.15", "-3.1", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "0.1000000000000000000000000000001", "12345678901234567890.123456789"}
	// forms writes the number n (in plain positional text) another way of
	// the same value.
	forms := func(r *rand.Rand, n string) string {
		switch r.IntN(5) {
		case 0:
			if !strings.Contains(n, ".") {
				n += ".0" // (CSV's 5. is 5 too, but not JSON)
			}
			return n + strings.Repeat("0", r.IntN(3))
		case 1: // an exponent that moves the point back
			e := r.IntN(4)
			i := strings.IndexByte(n, '.')
			digits := strings.Replace(n, ".", "", 1)
			neg := strings.HasPrefix(digits, "-")
			digits = strings.TrimPrefix(digits, "-")
			point := len(digits)
			if i >= 0 {
				point = i
				if neg {
					point--
				}
			}
			point -= e
			for point <= 0 {
				digits, point = "0"+digits, point+1
			}
			out := digits[:point]
			if point < len(digits) {
				out += "." + digits[point:]
			}
			out = strings.TrimLeft(out, "0")
			if out == "" || out[0] == '.' {
				out = "0" + out
			}
			if neg {
				out = "-" + out
			}
			return fmt.Sprintf("%se%d", out, e)
		case 2:
			if n == "0" {
				return "-0" + strings.Repeat(".0", r.IntN(2))
			}
		}
		return n
	}
	r := rand.New(rand.NewPCG(7, 11))
	for iter := range 20 {
		var keys, values []string
		for range 1 + r.IntN(60) {
			n := numbers[r.IntN(len(numbers))]
			k := forms(r, n)
			v, ok := new(big.Rat).SetString(k)
			if !ok {
				t.Fatalf("test bug: %q is not a number", k)
			}
			keys = append(keys, k)
			values = append(values, v.RatString())
		}
		var want []int64
		last := map[string]int{}
		for i, v := range values {
			last[v] = i
		}
		for i, v := range values {
			if last[v] != i {
				want = append(want, int64(i+1))
			}
		}
		var csv, jsonl strings.Builder
		csv.WriteString("k,v\n")
		for i, k := range keys {
			fmt.Fprintf(&csv, "%s,%d\n", k, i)
			fmt.Fprintf(&jsonl, `{"k":%s,"v":%d}`+"\n", k, i)
		}
		for _, c := range []struct{ name, data string }{{"f.csv", csv.String()}, {"f.jsonl", jsonl.String()}} {
			for _, fixed := range []bool{false, true} {
				opts := Options{Key: []string{"k"}, NotNull: []string{"k"}, Exact: []string{"k"}}
				if fixed {
					opts.Types = map[string]idemtype.Type{"k": idemtype.Decimal}
				}
				path := writeFile(t, c.name, []byte(c.data))
				f, plan := scanChecked(t, path, opts, ScanOptions{PartitionRows: int64(1 + r.IntN(7))})
				if plan.Rejected != 0 {
					t.Fatalf("iteration %d, %s: %d bad rows: %v", iter, c.name, plan.Rejected, plan.Rejects)
				}
				if got := supersededOf(plan); !slices.Equal(got, want) {
					t.Fatalf("iteration %d, %s (type fixed %v), keys %q: superseded %v, want %v", iter, c.name, fixed, keys, got, want)
				}
				var good []int64
				for i := range keys {
					if !slices.Contains(want, int64(i+1)) {
						good = append(good, int64(i+1))
					}
				}
				checkSkipped(t, f, plan, good)
			}
		}
	}
}
