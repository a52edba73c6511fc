package text

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/reader/internal/value"
)

// TestBatchBuilderGrows: a batch of more rows than the builder sized it
// for (the batch before was shorter), and of more text, keeps every value
// and null of every type, in batches of several sizes one after another.
func TestBatchBuilderGrows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []value.Type{value.Bool, value.Int64, value.Float64, value.Timestamp,
		value.LocalTimestamp, value.Date, value.String, value.Decimal, value.JSON}
	var s value.Schema
	for i, ty := range types {
		s = append(s, value.Column{Name: fmt.Sprintf("c%d", i), Type: ty})
	}
	// row r's value in column i: a null every 7th row (from row 100 in
	// column 0, so that its earlier rows had no bitmap yet).
	null := func(r, i int) bool { return (r+i)%7 == 0 && (i != 0 || r >= 100) }
	text := func(r int) string { return "v" + strconv.Itoa(r*r) + string(make([]byte, r%5)) }
	b := newBatchBuilder(mem, s, 1)
	defer b.release()
	ordinal := int64(0)
	for _, n := range []int{3, 200, 50, 1000, 1} {
		first := ordinal
		for r := range n {
			vals := make([]value.Value, len(types))
			for i, ty := range types {
				switch {
				case null(r, i):
					vals[i] = value.Value{Null: true}
				case ty == value.Float64:
					vals[i] = value.Value{F: float64(r) + 0.5}
				case ty == value.String || ty == value.Decimal || ty == value.JSON:
					vals[i] = value.Value{B: []byte(text(r))}
				default:
					vals[i] = value.Value{I: int64(r%2) * int64(r+i)}
					if ty != value.Bool {
						vals[i].I = int64(r) - 500 + int64(i)
					}
				}
			}
			b.add(ordinal, vals)
			ordinal++
		}
		batch := b.flush()
		rec := batch.Record
		if rec.NumRows() != int64(n) || len(batch.Ordinals) != n || batch.Ordinals[0] != first {
			t.Fatalf("batch of %d: %d rows, ordinals %v...", n, rec.NumRows(), batch.Ordinals[:1])
		}
		for i, ty := range types {
			col := rec.Column(i)
			if v, ok := col.(interface{ ValidateFull() error }); ok {
				if err := v.ValidateFull(); err != nil {
					t.Fatalf("batch of %d, column %v: %v", n, ty, err)
				}
			}
			if got, want := col.NullN(), countNulls(n, i, null); got != want {
				t.Fatalf("batch of %d, column %v: %d nulls, want %d", n, ty, got, want)
			}
			for r := range n {
				if got, want := col.IsNull(r), null(r, i); got != want {
					t.Fatalf("batch of %d, %v row %d: null %v, want %v", n, ty, r, got, want)
				}
				if null(r, i) {
					continue
				}
				var got, want any
				switch a := col.(type) {
				case *array.Boolean:
					got, want = a.Value(r), r%2 == 1
				case *array.Int64:
					got, want = a.Value(r), int64(r)-500+int64(i)
				case *array.Float64:
					got, want = a.Value(r), float64(r)+0.5
				case *array.Timestamp:
					got, want = a.Value(r), arrow.Timestamp(int64(r)-500+int64(i))
				case *array.Date32:
					got, want = a.Value(r), arrow.Date32(int64(r)-500+int64(i))
				case *array.String:
					got, want = a.Value(r), text(r)
				default:
					t.Fatalf("column %v is a %T", ty, col)
				}
				if got != want {
					t.Fatalf("batch of %d, %v row %d: %v, want %v", n, ty, r, got, want)
				}
			}
		}
		batch.Release()
	}
}

func countNulls(n, i int, null func(r, i int) bool) int {
	k := 0
	for r := range n {
		if null(r, i) {
			k++
		}
	}
	return k
}

// reallocCounter counts the buffers its allocator grew.
type reallocCounter struct {
	memory.Allocator
	n int
}

func (a *reallocCounter) Reallocate(size int, b []byte) []byte {
	a.n++
	return a.Allocator.Reallocate(size, b)
}

// TestBatchBuilderSizesBatches: a builder's first batch sizes a text
// column's bytes from its first rows' values rather than doubling them
// from 64 bytes, and a batch of a few more rows and longer values than
// the batch before grows no buffer; the values are kept.
func TestBatchBuilderSizesBatches(t *testing.T) {
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	mem := &reallocCounter{Allocator: checked}
	s := value.Schema{{Name: "order_id", Type: value.Int64}, {Name: "note", Type: value.String}}
	b := newBatchBuilder(mem, s, 20_000)
	defer b.release()
	text := func(r, pad int) string { return fmt.Sprintf("note %d of the orders file, %*s", r, r%9+pad, "") }
	// Up to 4 doublings of the first batch's text (64 bytes to its first
	// 16 values), then one to the batch's size; 14 more without it.
	for i, c := range []struct{ rows, pad, grown int }{{20_000, 0, 5}, {20_300, 1, 0}, {20_000, 0, 0}} {
		mem.n = 0
		for r := range c.rows {
			b.add(int64(r), []value.Value{{I: int64(r)}, {B: []byte(text(r, c.pad))}})
		}
		batch := b.flush()
		ids, notes := batch.Record.Column(0).(*array.Int64), batch.Record.Column(1).(*array.String)
		for r := range c.rows {
			if ids.Value(r) != int64(r) || notes.Value(r) != text(r, c.pad) {
				t.Fatalf("batch %d, row %d: %d %q, want %d %q", i, r, ids.Value(r), notes.Value(r), r, text(r, c.pad))
			}
		}
		batch.Release()
		if mem.n > c.grown {
			t.Errorf("batch %d (%d rows): its buffers grew %d times, want at most %d", i, c.rows, mem.n, c.grown)
		}
	}
}
