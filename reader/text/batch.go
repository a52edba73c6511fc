package text

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/value"
)

// batchBuilder accumulates converted rows into Arrow builders.
type batchBuilder struct {
	schema   *arrow.Schema
	types    []value.Type
	builders []array.Builder
	ordinals []int64
	// rows and data size the builders when a batch starts: the rows and
	// each text column's bytes of the batch before, so that a batch is
	// built in buffers of its size rather than grown to it by doubling
	// (copying each buffer about as many times as it doubles); the text a
	// little more, as a batch of longer texts would grow it once more.
	rows int
	data []int
}

// newBatchBuilder returns a builder of batches of schema s; rows, when
// positive, is how many rows the first batch is expected to hold.
func newBatchBuilder(mem memory.Allocator, s value.Schema, rows int) *batchBuilder {
	b := &batchBuilder{schema: s.Arrow(), rows: rows, data: make([]int, len(s))}
	for i, c := range s {
		b.types = append(b.types, c.Type)
		b.builders = append(b.builders, array.NewBuilder(mem, b.schema.Field(i).Type))
	}
	return b
}

func (b *batchBuilder) add(ordinal int64, vals []value.Value) {
	if len(b.ordinals) == 0 && b.rows > 0 {
		b.reserve()
	}
	b.ordinals = append(b.ordinals, ordinal)
	for i, v := range vals {
		bl := b.builders[i]
		if v.Null {
			bl.AppendNull()
			continue
		}
		switch b.types[i] {
		case value.Bool:
			bl.(*array.BooleanBuilder).Append(v.I != 0)
		case value.Int64:
			bl.(*array.Int64Builder).Append(v.I)
		case value.Float64:
			bl.(*array.Float64Builder).Append(v.F)
		case value.Timestamp, value.LocalTimestamp:
			bl.(*array.TimestampBuilder).Append(arrow.Timestamp(v.I))
		case value.Date:
			bl.(*array.Date32Builder).Append(arrow.Date32(v.I))
		default:
			bl.(*array.StringBuilder).BinaryBuilder.Append(v.B)
		}
	}
}

func (b *batchBuilder) len() int { return len(b.ordinals) }

// reserve sizes the empty builders for a batch like the one before.
func (b *batchBuilder) reserve() {
	for i, bl := range b.builders {
		bl.Reserve(b.rows)
		if bb, ok := bl.(*array.StringBuilder); ok && b.data[i] > 0 {
			bb.ReserveData(b.data[i] + b.data[i]/16)
		}
	}
}

// flush returns the rows added so far as a Batch and starts a new one.
func (b *batchBuilder) flush() partition.Batch {
	cols := make([]arrow.Array, len(b.builders))
	for i, bl := range b.builders {
		if bb, ok := bl.(*array.StringBuilder); ok {
			b.data[i] = bb.DataLen()
		}
		cols[i] = bl.NewArray()
	}
	b.rows = len(b.ordinals)
	rec := array.NewRecordBatch(b.schema, cols, int64(len(b.ordinals)))
	for _, c := range cols {
		c.Release()
	}
	out := partition.Batch{Record: rec, Ordinals: b.ordinals}
	b.ordinals = make([]int64, 0, cap(b.ordinals))
	return out
}

func (b *batchBuilder) release() {
	for _, bl := range b.builders {
		bl.Release()
	}
}
