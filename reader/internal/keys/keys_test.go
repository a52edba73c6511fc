package keys

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/idemport/idemport/reader/internal/value"
)

// repeatedOrdinals is what Candidates must find, computed from the keys
// themselves: the ordinals of the rows whose key occurs more than once
// (nil keys are bad rows).
func repeatedOrdinals(ks [][]byte) []int64 {
	count := map[string]int{}
	for _, k := range ks {
		if k != nil {
			count[string(k)]++
		}
	}
	var out []int64
	for i, k := range ks {
		if k != nil && count[string(k)] > 1 {
			out = append(out, int64(i+1))
		}
	}
	return out
}

func candidatesOf(t *testing.T, ks [][]byte, dir string, held, maxOpen int) ([]int64, bool) {
	t.Helper()
	k := NewIndex(dir, held)
	k.maxOpen = maxOpen
	for i, key := range ks {
		if key != nil {
			k.Add(int64(i+1), key)
		}
	}
	if len(ks) > 0 && ks[len(ks)-1] == nil { // bad rows at the end have no Add
		for k.n < int64(len(ks)) {
			k.push(0)
		}
	}
	spilled := k.Spilled()
	got, err := k.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	return got, spilled
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		t.Errorf("%s left behind", e.Name())
	}
}

// TestIndexSpill finds the same candidates with every bound, held in
// memory or spilled, as the keys themselves say: repeats within and across
// spilled runs, next to a spill boundary, of the int64 edges, after bad
// rows, and none at all; and leaves nothing in its directory.
func TestIndexSpill(t *testing.T) {
	int64Key := func(n int64) []byte { return AppendValue(nil, value.Value{I: n}, value.Int64) }
	edges := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][][]byte{}
	var distinct, edgy, dense, boundary [][]byte
	for i := range 5000 {
		distinct = append(distinct, int64Key(int64(i)*7919))
		edgy = append(edgy, int64Key(edges[rng.IntN(len(edges))]))
		if i%11 == 5 {
			edgy[i] = nil // a bad row
		}
		dense = append(dense, int64Key(rng.Int64N(3000)))
		boundary = append(boundary, int64Key(int64(i)))
	}
	boundary[63] = int64Key(64) // repeats across the boundary of a bound of 64 (rows 64 and 65)
	boundary[4999] = int64Key(0)
	cases["distinct"] = distinct
	cases["int64 edges and bad rows"] = edgy
	cases["dense repeats"] = dense
	cases["across a boundary"] = boundary
	cases["one key"] = slices.Repeat([][]byte{int64Key(math.MinInt64)}, 300)
	cases["ends with bad rows"] = append(slices.Clone(dense[:100]), nil, nil)
	for name, ks := range cases {
		want := repeatedOrdinals(ks)
		if name != "distinct" && len(want) == 0 {
			t.Fatalf("%s: no repeats to find", name)
		}
		for _, held := range []int{0, 1, 2, 3, 7, 64, 1000} {
			dir := t.TempDir()
			maxOpen := maxParts
			if held == 3 {
				maxOpen = 3 // the partitions in several reads of the spill
			}
			got, spilled := candidatesOf(t, ks, dir, held, maxOpen)
			if !slices.Equal(got, want) {
				t.Errorf("%s, %d held: %d candidates, want %d (first %v, want %v)", name, held, len(got), len(want), got[:min(len(got), 8)], want[:min(len(want), 8)])
			}
			if spilled != (held > 0 && held < len(ks)) {
				t.Errorf("%s, %d held: spilled %v", name, held, spilled)
			}
			emptyDir(t, dir)
		}
	}
}

// TestIndexSpillClosed: an index closed before its candidates, as a plan
// pass that fails closes it, removes its spill.
func TestIndexSpillClosed(t *testing.T) {
	dir := t.TempDir()
	k := NewIndex(dir, 4)
	for i := range int64(100) {
		k.Add(i+1, AppendValue(nil, value.Value{I: i % 10}, value.Int64))
	}
	if !k.Spilled() {
		t.Fatal("not spilled")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("%d files in the spill directory, want 1", len(es))
	}
	k.Close()
	k.Close()
	emptyDir(t, dir)
	var none *Index
	none.Close()
}

// TestIndexSpillError: a spill that cannot be written is an error of
// Candidates, not a wrong answer.
func TestIndexSpillError(t *testing.T) {
	k := NewIndex("/nonexistent/idemport", 2)
	for i := range int64(10) {
		k.Add(i+1, AppendValue(nil, value.Value{I: i}, value.Int64))
	}
	if got, err := k.Candidates(); err == nil {
		t.Fatalf("no error, candidates %v", got)
	}
}

// TestIndexSearchers finds the same candidates whatever the number of
// goroutines that search, held in memory or spilled: repeats at either end,
// across the points where the goroutines' shares of the rows meet, and at
// random, among bad rows; and no false repeat where they meet.
func TestIndexSearchers(t *testing.T) {
	int64Key := func(n int64) []byte { return AppendValue(nil, value.Value{I: n}, value.Int64) }
	const n = 1<<16 + 1000 // a held index this large is searched on several goroutines
	ks := make([][]byte, n)
	for i := range ks {
		ks[i] = int64Key(int64(i) * 7919)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range [][2]int{{0, n - 1}, {n/2 - 2, n/2 + 1}, {n/3 - 2, n/3 + 1}, {n/3 + 5, 2*n/3 + 3}, {n/4 - 2, 3*n/4 + 1}} {
		ks[p[1]] = ks[p[0]]
	}
	for range 200 {
		ks[rng.IntN(n)] = ks[rng.IntN(n)]
	}
	for range 50 {
		ks[rng.IntN(n)] = nil // a bad row
	}
	want := repeatedOrdinals(ks)
	for _, held := range []int{0, 5000} {
		for _, workers := range []int{1, 2, 3} {
			dir := t.TempDir()
			k := NewIndex(dir, held)
			k.workers = workers
			for i, key := range ks {
				if key != nil {
					k.Add(int64(i+1), key)
				}
			}
			if k.Spilled() != (held > 0) {
				t.Fatalf("%d held: spilled %v", held, k.Spilled())
			}
			got, err := k.Candidates()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d held, %d searchers: %d candidates, want %d", held, workers, len(got), len(want))
			}
			emptyDir(t, dir)
		}
	}
}
