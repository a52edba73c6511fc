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

// intKey is a row's key for TestIndexIntKeys: an integer given to AddInt,
// other key bytes given to Add, or neither (a bad row).
type intKey struct {
	n     int64
	other []byte
	bad   bool
}

// TestIndexIntKeys: keys given as integers (AddInt) find the candidates
// their key bytes would, whether they count up (kept, nothing hashed:
// evenly, unevenly, after bad rows, by steps past int64's range), repeat
// the key just before, repeat an earlier one, count down, meet an equal key
// given as bytes (2.0 after 2), or count up past the bytes of the hashes
// the index holds; held in memory or spilled.
func TestIndexIntKeys(t *testing.T) {
	ints := func(ns ...int64) []intKey {
		var ks []intKey
		for _, n := range ns {
			ks = append(ks, intKey{n: n})
		}
		return ks
	}
	upTo := func(n int64) []int64 {
		var ns []int64
		for i := range n {
			ns = append(ns, i+1)
		}
		return ns
	}
	squares := func(n int64) []int64 {
		var ns []int64
		for i := range n {
			ns = append(ns, (i+1)*(i+1))
		}
		return ns
	}
	withBad := ints(upTo(3000)...)
	for i := 5; i < len(withBad); i += 97 {
		withBad[i] = intKey{bad: true}
	}
	cases := []struct {
		name string
		ks   []intKey
		kept bool // kept unhashed to the end
	}{
		{"counting up", ints(upTo(5000)...), true},
		{"counting up by ten from below zero", ints(-50, -40, -30, -20, -10, 0, 10, 20), true},
		{"counting up unevenly", ints(1, 2, 3, 7, 8, 100, 1000, 1001, 1002), true},
		{"counting up past bad rows", withBad, true},
		{"int64 edges", ints(math.MinInt64, -1, math.MaxInt64-1, math.MaxInt64), true},
		{"a step past int64", ints(math.MinInt64, math.MaxInt64), true},
		{"the key before repeated", ints(1, 2, 3, 3, 4), false},
		{"the first key repeated", ints(7, 7), false},
		{"an earlier key repeated", ints(append(upTo(3000), 1500, 3001)...), false},
		{"counting down", ints(5, 4, 3, 5, 2), false},
		{"the int64 edges repeated", ints(math.MinInt64, math.MaxInt64, math.MinInt64), false},
		{"an equal key as bytes", append(ints(1, 2, 3), intKey{other: AppendText(nil, value.Cell{B: []byte("2.0"), Kind: value.CellText})}, intKey{n: 4}), false},
		{"other keys as bytes", append(ints(1, 2, 3), intKey{other: AppendText(nil, value.Cell{B: []byte("x"), Kind: value.CellText})}, intKey{n: 4}, intKey{n: 2}), false},
		{"counting up by squares", ints(squares(3000)...), true},
		{"counting up by squares, then a repeat", ints(append(squares(3000), 4)...), false},
	}
	for _, c := range cases {
		var bs [][]byte
		for _, k := range c.ks {
			switch {
			case k.bad:
				bs = append(bs, nil)
			case k.other != nil:
				bs = append(bs, k.other)
			default:
				bs = append(bs, AppendValue(nil, value.Value{I: k.n}, value.Int64))
			}
		}
		want := repeatedOrdinals(bs)
		for _, held := range []int{0, 3, 64} {
			dir := t.TempDir()
			k := NewIndex(dir, held)
			for i, key := range c.ks {
				switch {
				case key.bad:
				case key.other != nil:
					k.Add(int64(i+1), key.other)
				default:
					k.AddInt(int64(i+1), key.n)
				}
			}
			// Kept unhashed within the bytes of the hashes held: not
			// past those of 3.
			kept := !k.hashed && k.n == 0 && len(k.stretches) > 0
			if (held == 0 && kept != c.kept) || (held == 3 && kept) {
				t.Errorf("%s, %d held: kept %v, want %v (%d stretches, %d hashed)", c.name, held, kept, c.kept && held == 0, len(k.stretches), k.n)
			}
			if c.name == "counting up" && held == 0 && len(k.steps) != len(c.ks)-1 {
				t.Errorf("%s: %d bytes of steps for %d keys", c.name, len(k.steps), len(c.ks))
			}
			got, err := k.Candidates()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, %d held: candidates %v, want %v", c.name, held, got[:min(len(got), 8)], want[:min(len(want), 8)])
			}
			emptyDir(t, dir)
		}
	}
}

// TestTextInt: a cell TextInt takes is keyed by AppendText as its integer
// by AppendValue; the cells it leaves are not canonical integers' text.
func TestTextInt(t *testing.T) {
	for _, c := range []struct {
		text string
		kind value.CellKind
		ok   bool
	}{
		{"0", value.CellText, true},
		{"-0", value.CellText, true},
		{"42", value.CellNumber, true},
		{"-17", value.CellText, true},
		{"9223372036854775807", value.CellText, true},
		{"-9223372036854775808", value.CellText, true},
		{"9223372036854775808", value.CellText, false},
		{"007", value.CellText, false},
		{"+7", value.CellText, false},
		{"1.0", value.CellText, false},
		{"1e3", value.CellNumber, false},
		{"", value.CellText, false},
		{"5", value.CellString, true}, // as the number 5: one value in the text column of both
		{"05", value.CellString, false},
	} {
		cell := value.Cell{B: []byte(c.text), Kind: c.kind}
		n, ok := TextInt(cell)
		if ok != c.ok {
			t.Errorf("TextInt(%q) ok %v, want %v", c.text, ok, c.ok)
			continue
		}
		if ok {
			if got, want := AppendValue(nil, value.Value{I: n}, value.Int64), AppendText(nil, cell); !slices.Equal(got, want) {
				t.Errorf("TextInt(%q) = %d, keyed %q; AppendText keys it %q", c.text, n, got, want)
			}
		}
	}
}

// TestAppendTextKeysAJSONStringAsItsText: a JSON string keys as the
// number or boolean its text writes, for a column that holds both is text
// and they are one value there.
func TestAppendTextKeysAJSONStringAsItsText(t *testing.T) {
	for _, c := range []struct {
		text string
		kind value.CellKind
	}{{"100", value.CellNumber}, {"1.50", value.CellNumber}, {"true", value.CellBool}} {
		s, n := AppendText(nil, value.Cell{B: []byte(c.text), Kind: value.CellString}), AppendText(nil, value.Cell{B: []byte(c.text), Kind: c.kind})
		if !slices.Equal(s, n) {
			t.Errorf("AppendText of the string %q is %q, of the %v %q", c.text, s, c.kind, n)
		}
	}
}

// TestHashedIntKeysReuseTheBuffer: once keys are hashed, AddInt renders
// each integer in the index's buffer, allocating nothing per row.
func TestHashedIntKeysReuseTheBuffer(t *testing.T) {
	k := NewIndex(t.TempDir(), 1<<20)
	defer k.Close()
	k.AddInt(1, 5)
	k.AddInt(2, 5) // not counting up: hashed from here on
	ordinal := int64(2)
	allocs := testing.AllocsPerRun(1000, func() {
		ordinal++
		k.AddInt(ordinal, -ordinal)
	})
	if allocs != 0 {
		t.Fatalf("AddInt of a hashed index allocated %v times a row, want 0", allocs)
	}
}
