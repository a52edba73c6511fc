package reader

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// spillKeys returns n keys with repeats: the int64 edges and a few
// hundred values drawn at random, so that repeats fall within and across
// the runs of a small KeysHeld.
func spillKeys(n int) []int64 {
	edges := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
	rng := rand.New(rand.NewPCG(3, 4))
	ks := make([]int64, n)
	for i := range ks {
		if i%5 == 0 {
			ks[i] = edges[rng.IntN(len(edges))]
		} else {
			ks[i] = rng.Int64N(int64(n)) * 1000003
		}
	}
	return ks
}

// survivors reads every partition and returns each key's value among the
// rows the readers return, failing on a key returned twice.
func survivors(t *testing.T, f *File, plan *Plan) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, p := range plan.Partitions {
		rows, _, _, err := readPart(f, plan, p, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			k := fmt.Sprint(r[0])
			if _, dup := got[k]; dup {
				t.Fatalf("key %s returned twice", k)
			}
			got[k] = fmt.Sprint(r[1])
		}
	}
	return got
}

func noFiles(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		t.Errorf("%s left behind", e.Name())
	}
}

// TestKeySpill plans keyed CSV and Parquet files with the key hashes held
// in memory and spilled past a bound of a few rows: the plans are the
// same, the rows read are the last of each key, value by value against
// the source (the int64 edges among the repeated keys), and the spill
// directory is empty after the pass.
func TestKeySpill(t *testing.T) {
	const n = 3000
	ks := spillKeys(n)
	last := map[string]string{}
	var csv bytes.Buffer
	csv.WriteString("k,v\n")
	for i, k := range ks {
		fmt.Fprintf(&csv, "%d,v%d\n", k, i)
		last[fmt.Sprint(k)] = fmt.Sprint("v", i)
	}
	if len(last) > n*9/10 {
		t.Fatalf("only %d repeats", n-len(last))
	}
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil))
	defer b.Release()
	for i, k := range ks {
		b.Field(0).(*array.Int64Builder).Append(k)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	files := map[string]string{
		"csv":     writeFile(t, "f.csv", csv.Bytes()),
		"parquet": writeParquetRecord(t, "f.parquet", rec, 97, false),
	}
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			opts := Options{Key: []string{"k"}, NotNull: []string{"k"}}
			var plans []*Plan
			for _, held := range []int{0, 5, 100} {
				dir := t.TempDir()
				f, plan := scanChecked(t, path, opts, ScanOptions{PartitionRows: 211, TempDir: dir, KeysHeld: held})
				noFiles(t, dir)
				if got := survivors(t, f, plan); !reflect.DeepEqual(got, last) {
					t.Fatalf("%d held: %d keys read, want %d", held, len(got), len(last))
				}
				plans = append(plans, plan)
			}
			if plans[0].Superseded != int64(n-len(last)) {
				t.Fatalf("%d superseded, want %d", plans[0].Superseded, n-len(last))
			}
			for _, p := range plans[1:] {
				if !reflect.DeepEqual(p.Partitions, plans[0].Partitions) || p.Superseded != plans[0].Superseded {
					t.Fatal("the plan with the key hashes spilled is not the plan with them held")
				}
			}
		})
	}
}

// TestKeySpillRemovedOnFailure: a pass that stops on a defect after its
// key hashes spilled, or is cancelled, leaves no file behind.
func TestKeySpillRemovedOnFailure(t *testing.T) {
	var csv bytes.Buffer
	csv.WriteString("k,v\n")
	for i := range 2000 {
		fmt.Fprintf(&csv, "%d,v%d\n", i%700, i)
	}
	fmt.Fprintf(&csv, "1,%s\n", bytes.Repeat([]byte("x"), 5000)) // over MaxRowBytes
	path := writeFile(t, "f.csv", csv.Bytes())
	opts := Options{Key: []string{"k"}, NotNull: []string{"k"}, MaxRowBytes: 1000}
	dir := t.TempDir()
	f := openChecked(t, path, opts)
	if _, err := f.Scan(context.Background(), ScanOptions{TempDir: dir, KeysHeld: 5}); err == nil {
		t.Fatal("a row over MaxRowBytes did not stop the pass")
	}
	noFiles(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	f = openChecked(t, path, opts)
	_, err := f.Scan(ctx, ScanOptions{TempDir: dir, KeysHeld: 5, PartitionRows: 100, Progress: func(_, rows int64) {
		if n++; rows > 1500 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("a cancelled pass returned no error")
	}
	noFiles(t, dir)
}
