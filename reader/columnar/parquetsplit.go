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

// planUnit opens row group k, whose bytes ld holds for both fr and frB,
// for the plan pass, in batches of batch rows. The fields s.skip marks
// are left undecoded: their arrays in the batches are of the null type.
func (s *parquetFile) planUnit(ld *loaded, fr, frB *pqarrow.FileReader, k, batch int, secondCore <-chan struct{}) (unit, error) {
	return s.unitOf(ld, fr, frB, k, batch, secondCore, s.skip, nil)
}

// unitOf opens row group k, whose bytes ld holds for fr (and frB, if
// not nil), in batches of batch rows: its columns split in two halves of
// about equal decoded size, each read by a record reader of fr or frB and
// by pageChunks (see pageColumns), the second half on a second goroutine
// once secondCore is closed. The fields at which skip is true are left
// undecoded: their arrays are of the null type. dicts holds, by column
// index, dictionaries the plan pass read from these very bytes (see
// splitUnit.dictionaries), which the pageChunks take instead of reading
// their dictionary pages again.
func (s *parquetFile) unitOf(ld *loaded, fr, frB *pqarrow.FileReader, k, batch int, secondCore <-chan struct{}, skip []bool, dicts map[int]*chunkDict) (unit, error) {
	fields := fr.Manifest.Fields
	read := s.keep // the fields decoded, in file order
	if read == nil {
		read = make([]int, len(fields))
		for i := range read {
			read[i] = i
		}
	}
	flat := !slices.ContainsFunc(fields, func(f pqarrow.SchemaField) bool { return !f.IsLeaf() })
	var eligible []int
	if flat {
		eligible = s.pageColumns(fr, k, read)
	}
	// A column is left undecoded only when a pageChunk reads it: its
	// pages are then checked as its partition readers will decode them,
	// so that what they would refuse the plan pass refuses first.
	skipped := func(at int) bool { return at < len(skip) && skip[at] && slices.Contains(eligible, at) }
	chunked := slices.DeleteFunc(slices.Clone(eligible), skipped)
	if !flat || (frB == nil || len(read) < 2) && len(chunked) == 0 && !slices.ContainsFunc(read, skipped) {
		return s.records(fr, k)
	}
	rg := s.md.RowGroup(k)
	type col struct {
		at   int // place in the batch
		size int64
	}
	var cols []col
	for j, i := range read {
		c := col{at: j}
		if cc, err := rg.ColumnChunk(fields[i].ColIndex); err == nil {
			c.size = cc.TotalUncompressedSize()
		}
		cols = append(cols, c)
	}
	slices.SortStableFunc(cols, func(a, b col) int { return cmp.Compare(b.size, a.size) }) // largest first
	var half [2][]int
	var load [2]int64
	for _, c := range cols {
		h := 0
		if load[1] < load[0] && frB != nil {
			h = 1
		}
		half[h] = append(half[h], c.at)
		load[h] += c.size
	}
	u := &splitUnit{second: secondCore, where: make([][2]int, len(read)), left: rg.NumRows(), batch: int64(max(batch, 1))}
	for at := range u.where {
		u.where[at] = [2]int{-1, 0}
	}
	leavesOf := func(ats []int) []int {
		out := make([]int, len(ats))
		for i, at := range ats {
			out[i] = fields[read[at]].ColIndex
		}
		return out
	}
	s.f.Stats.Groups.Add(1)
	all := make([]arrow.Field, len(read))
	for at := range all {
		all[at] = arrow.Field{Name: fields[read[at]].Field.Name, Type: arrow.Null, Nullable: true}
	}
	for h, fr := range []*pqarrow.FileReader{fr, frB} {
		slices.Sort(half[h])
		var byRR []int
		for _, at := range half[h] {
			if skipped(at) {
				c, err := newPageChunk(s, ld, k, fields[read[at]], s.f.Opts.Allocator, dicts[fields[read[at]].ColIndex])
				if err != nil {
					u.close()
					return nil, s.f.unitError(err, fmt.Sprintf("row group %d", k))
				}
				c.checkOnly = true
				u.checks[h] = append(u.checks[h], c)
				continue
			}
			if !slices.Contains(chunked, at) {
				u.where[at] = [2]int{h, len(byRR)}
				byRR = append(byRR, at)
				continue
			}
			c, err := newPageChunk(s, ld, k, fields[read[at]], s.f.Opts.Allocator, dicts[fields[read[at]].ColIndex])
			if err != nil {
				u.close()
				return nil, s.f.unitError(err, fmt.Sprintf("row group %d", k))
			}
			u.where[at] = [2]int{h, -1 - len(u.chunks[h])}
			u.chunks[h] = append(u.chunks[h], c)
			all[at] = *fields[read[at]].Field
		}
		if len(byRR) == 0 {
			continue
		}
		rr, err := fr.GetRecordReader(context.Background(), leavesOf(byRR), []int{k})
		if err != nil {
			u.close()
			return nil, s.f.unitError(err, fmt.Sprintf("row group %d", k))
		}
		u.rr[h] = rr
		for j, at := range byRR {
			all[at] = rr.Schema().Field(j)
		}
	}
	u.schema = arrow.NewSchema(all, nil)
	return u, nil
}

// splitUnit yields the batches of a row group read as two halves of its
// columns, and arrays of the null type for the columns left undecoded.
type splitUnit struct {
	rr     [2]pqarrow.RecordReader // a half's record reader, or nil
	chunks [2][]*pageChunk         // a half's pageChunks
	checks [2][]*pageChunk         // a half's pageChunks of columns not decoded, which check their pages
	// where says, for each column, its half (-1: not decoded) and its
	// place there: j among its record reader's columns, or -1-j for its
	// pageChunk j.
	where  [][2]int
	schema *arrow.Schema
	second <-chan struct{}
	// left are the rows still to yield, in batches of batch.
	left, batch int64
}

var errSplitRows = errors.New("its columns disagree on the number of rows")

// half is one half's next batch, or why there is none.
type half struct {
	rec      arrow.RecordBatch // of its record reader, retained; or nil
	cols     []arrow.Array     // of its pageChunks
	err      error
	panicked any
}

// read reads the next n rows of the half of rr, chunks and checks.
func (h *half) read(rr pqarrow.RecordReader, chunks, checks []*pageChunk, n int64) {
	defer func() {
		if v := recover(); v != nil {
			h.panicked = v
		}
	}()
	if rr != nil {
		if !rr.Next() {
			if h.err = rr.Err(); h.err == nil {
				h.err = errSplitRows
			}
			return
		}
		h.rec = rr.RecordBatch()
		h.rec.Retain()
		if h.rec.NumRows() != n {
			h.err = errSplitRows
			return
		}
	}
	for _, c := range chunks {
		a, err := c.read(int(n))
		if err != nil {
			h.err = err
			return
		}
		h.cols = append(h.cols, a)
	}
	for _, c := range checks {
		if h.err = c.skip(int(n)); h.err != nil {
			return
		}
	}
}

func (h *half) release() {
	if h.rec != nil {
		h.rec.Release()
	}
	for _, a := range h.cols {
		a.Release()
	}
}

func (u *splitUnit) next() (arrow.RecordBatch, error) {
	if u.left == 0 {
		return nil, io.EOF
	}
	n := min(u.left, u.batch)
	var hs [2]half
	defer hs[0].release()
	defer hs[1].release()
	var wg sync.WaitGroup
	if u.rr[1] != nil || len(u.chunks[1]) > 0 || len(u.checks[1]) > 0 {
		if partition.Closed(u.second) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hs[1].read(u.rr[1], u.chunks[1], u.checks[1], n)
			}()
		} else {
			hs[1].read(u.rr[1], u.chunks[1], u.checks[1], n)
		}
	}
	hs[0].read(u.rr[0], u.chunks[0], u.checks[0], n)
	wg.Wait()
	for _, h := range hs {
		if h.panicked != nil {
			panic(h.panicked)
		}
	}
	for _, h := range hs {
		if h.err != nil {
			return nil, h.err
		}
	}
	u.left -= n
	cols := make([]arrow.Array, len(u.where))
	for f, w := range u.where {
		switch {
		case w[0] < 0:
			cols[f] = array.NewNull(int(n))
			defer cols[f].Release()
		case w[1] < 0:
			cols[f] = hs[w[0]].cols[-1-w[1]]
		default:
			cols[f] = hs[w[0]].rec.Column(w[1])
		}
	}
	return array.NewRecordBatch(u.schema, cols, n), nil
}

// dictionaries returns, by column index, the dictionaries its pageChunks
// have read from their first pages.
func (u *splitUnit) dictionaries() map[int]*chunkDict {
	out := map[int]*chunkDict{}
	for h := range u.chunks {
		for _, c := range slices.Concat(u.chunks[h], u.checks[h]) {
			if d := c.dictionary(); d != nil {
				out[c.leaf] = d
			}
		}
	}
	return out
}

func (u *splitUnit) close() {
	for h := range u.rr {
		if u.rr[h] != nil {
			u.rr[h].Release()
		}
		for _, c := range slices.Concat(u.chunks[h], u.checks[h]) {
			c.close()
		}
	}
}
