package columnar

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/reader/internal/partition"
)

// The plan pass of a Parquet file is mostly decoding. A row group of a
// flat file is decoded by two record readers over disjoint halves of its
// columns, one of them on a second goroutine once a second core is free,
// and their batches are zipped back into one: the memory of one batch, on
// two cores. Panics of the second decoder are raised on the pass's
// goroutine, where scanArrow turns them into errors.

// planUnit opens row group k, whose bytes are loaded for both fr and frB,
// for the plan pass.
func (s *parquetFile) planUnit(fr, frB *pqarrow.FileReader, k int, secondCore <-chan struct{}) (unit, error) {
	fields := fr.Manifest.Fields
	read := s.keep // the fields decoded, in file order
	if read == nil {
		read = make([]int, len(fields))
		for i := range read {
			read[i] = i
		}
	}
	if len(read) < 2 || slices.ContainsFunc(fields, func(f pqarrow.SchemaField) bool { return !f.IsLeaf() }) {
		return s.records(fr, k)
	}
	// Split the columns in two halves of about equal decoded size.
	rg := s.md.RowGroup(k)
	type col struct {
		at   int // place in the batch
		size int64
	}
	cols := make([]col, len(read))
	for j, i := range read {
		cols[j] = col{at: j}
		if cc, err := rg.ColumnChunk(fields[i].ColIndex); err == nil {
			cols[j].size = cc.TotalUncompressedSize()
		}
	}
	slices.SortStableFunc(cols, func(a, b col) int { return cmp.Compare(b.size, a.size) }) // largest first
	var half [2][]int
	var load [2]int64
	for _, c := range cols {
		h := 0
		if load[1] < load[0] {
			h = 1
		}
		half[h] = append(half[h], c.at)
		load[h] += c.size
	}
	u := &splitUnit{second: secondCore, where: make([][2]int, len(read))}
	for h := range half {
		slices.Sort(half[h])
		for j, at := range half[h] {
			u.where[at] = [2]int{h, j}
		}
	}
	leavesOf := func(ats []int) []int {
		out := make([]int, len(ats))
		for i, at := range ats {
			out[i] = fields[read[at]].ColIndex
		}
		return out
	}
	s.f.Stats.Groups.Add(1)
	var err error
	if u.rr[0], err = fr.GetRecordReader(context.Background(), leavesOf(half[0]), []int{k}); err != nil {
		return nil, s.f.unitError(err, fmt.Sprintf("row group %d", k))
	}
	if u.rr[1], err = frB.GetRecordReader(context.Background(), leavesOf(half[1]), []int{k}); err != nil {
		u.rr[0].Release()
		return nil, s.f.unitError(err, fmt.Sprintf("row group %d", k))
	}
	sc0, sc1 := u.rr[0].Schema(), u.rr[1].Schema()
	all := make([]arrow.Field, len(read))
	for f, w := range u.where {
		all[f] = []*arrow.Schema{sc0, sc1}[w[0]].Field(w[1])
	}
	u.schema = arrow.NewSchema(all, nil)
	return u, nil
}

// splitUnit yields the batches of a row group read as two halves.
type splitUnit struct {
	rr     [2]pqarrow.RecordReader
	where  [][2]int // for each column: its half, and its place there
	schema *arrow.Schema
	second <-chan struct{}
}

var errSplitRows = errors.New("its columns disagree on the number of rows")

// half is one record reader's next batch, or why there is none.
type half struct {
	rec      arrow.RecordBatch // retained
	err      error             // io.EOF at the end
	panicked any
}

func (h *half) read(rr pqarrow.RecordReader) {
	defer func() {
		if v := recover(); v != nil {
			h.panicked = v
		}
	}()
	if !rr.Next() {
		if h.err = rr.Err(); h.err == nil {
			h.err = io.EOF
		}
		return
	}
	h.rec = rr.RecordBatch()
	h.rec.Retain()
}

func (u *splitUnit) next() (arrow.RecordBatch, error) {
	var hs [2]half
	var wg sync.WaitGroup
	if partition.Closed(u.second) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs[1].read(u.rr[1])
		}()
	} else {
		hs[1].read(u.rr[1])
	}
	hs[0].read(u.rr[0])
	wg.Wait()
	defer func() {
		for _, h := range hs {
			if h.rec != nil {
				h.rec.Release()
			}
		}
	}()
	for _, h := range hs {
		if h.panicked != nil {
			panic(h.panicked)
		}
	}
	for _, h := range hs {
		if h.err != nil && h.err != io.EOF {
			return nil, h.err
		}
	}
	switch {
	case hs[0].err == io.EOF && hs[1].err == io.EOF:
		return nil, io.EOF
	case hs[0].err != nil || hs[1].err != nil || hs[0].rec.NumRows() != hs[1].rec.NumRows():
		return nil, errSplitRows
	}
	cols := make([]arrow.Array, len(u.where))
	for f, w := range u.where {
		cols[f] = hs[w[0]].rec.Column(w[1])
	}
	return array.NewRecordBatch(u.schema, cols, hs[0].rec.NumRows()), nil
}

func (u *splitUnit) close() {
	u.rr[0].Release()
	u.rr[1].Release()
}
