package columnar

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestSplitUnitHalves: a panic of either half's decoder is raised on the
// plan pass's goroutine, and a half that ends early is an error.
func TestSplitUnitHalves(t *testing.T) {
	b := array.NewInt64Builder(memory.NewGoAllocator())
	b.AppendValues([]int64{1, 2}, nil)
	col := b.NewArray()
	defer col.Release()
	batch := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 2)
	defer batch.Release()
	good := func() *fakeRR { return &fakeRR{next: func() bool { return true }, rec: batch} }
	ended := &fakeRR{next: func() bool { return false }}
	boom := &fakeRR{next: func() bool { panic("boom") }}
	closedCh := make(chan struct{})
	close(closedCh)
	for _, second := range []chan struct{}{closedCh, make(chan struct{})} {
		for _, h := range []int{0, 1} {
			u := &splitUnit{where: [][2]int{{0, 0}, {1, 0}}, second: second, left: 4, batch: 2, schema: arrow.NewSchema(
				[]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)}
			u.rr[0], u.rr[1] = good(), good()
			u.rr[h] = boom
			v := func() (v any) {
				defer func() { v = recover() }()
				u.next()
				return nil
			}()
			if v != "boom" {
				t.Errorf("half %d panics: got %v", h, v)
			}
			u.rr[h] = ended
			if _, err := u.next(); !errors.Is(err, errSplitRows) {
				t.Errorf("half %d ends early: %v", h, err)
			}
		}
	}
}

// fakeRR is a record reader whose Next is given.
type fakeRR struct {
	pqarrow.RecordReader
	next func() bool
	rec  arrow.RecordBatch
}

func (f *fakeRR) Next() bool                     { return f.next() }
func (f *fakeRR) RecordBatch() arrow.RecordBatch { return f.rec }
func (f *fakeRR) Err() error                     { return nil }
func (f *fakeRR) Release()                       {}
