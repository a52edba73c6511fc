package reader

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Batch is a run of rows as an Arrow record batch, with the ordinal of each
// row. The receiver of a Batch owns it and must call Release.
type Batch struct {
	Record   arrow.RecordBatch
	Ordinals []int64
}

// Release frees the batch's Arrow memory.
func (b Batch) Release() {
	if b.Record != nil {
		b.Record.Release()
	}
}

// batchBuilder accumulates converted rows into Arrow builders.
type batchBuilder struct {
	schema   *arrow.Schema
	types    []Type
	builders []array.Builder
	ordinals []int64
}

func newBatchBuilder(mem memory.Allocator, s Schema) *batchBuilder {
	b := &batchBuilder{schema: s.Arrow()}
	for i, c := range s {
		b.types = append(b.types, c.Type)
		b.builders = append(b.builders, array.NewBuilder(mem, b.schema.Field(i).Type))
	}
	return b
}

func (b *batchBuilder) add(ordinal int64, vals []value) {
	b.ordinals = append(b.ordinals, ordinal)
	for i, v := range vals {
		bl := b.builders[i]
		if v.null {
			bl.AppendNull()
			continue
		}
		switch b.types[i] {
		case Bool:
			bl.(*array.BooleanBuilder).Append(v.i != 0)
		case Int64:
			bl.(*array.Int64Builder).Append(v.i)
		case Float64:
			bl.(*array.Float64Builder).Append(v.f)
		case Timestamp:
			bl.(*array.TimestampBuilder).Append(arrow.Timestamp(v.i))
		default:
			bl.(*array.StringBuilder).BinaryBuilder.Append(v.b)
		}
	}
}

func (b *batchBuilder) len() int { return len(b.ordinals) }

// flush returns the rows added so far as a Batch and starts a new one.
func (b *batchBuilder) flush() Batch {
	cols := make([]arrow.Array, len(b.builders))
	for i, bl := range b.builders {
		cols[i] = bl.NewArray()
	}
	rec := array.NewRecordBatch(b.schema, cols, int64(len(b.ordinals)))
	for _, c := range cols {
		c.Release()
	}
	out := Batch{Record: rec, Ordinals: b.ordinals}
	b.ordinals = make([]int64, 0, cap(b.ordinals))
	return out
}

func (b *batchBuilder) release() {
	for _, bl := range b.builders {
		bl.Release()
	}
}
