package columnar

import (
	"bytes"
	"encoding/base64"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet has no timestamp of seconds. The Rust parquet crate (arrow-rs,
// and so parquet-wasm, Polars' Rust writers before their own, DataFusion)
// writes an Arrow timestamp[s] as a bare INT64, with no logical type, and
// keeps the Arrow type in the stored Arrow schema (the ARROW:schema key),
// which its reader applies. pqarrow applies a stored timestamp type only
// over a Parquet timestamp, so such a column would read as integers:
// seconds since the epoch imported as numbers. storedStamps finds those
// columns, and stampUnit gives their decoded integers the stored type,
// whose layout (64-bit values) is theirs.

// storedStamps returns, by top-level field, the stored Arrow timestamp
// type of each column the Parquet schema stores as a bare INT64 (no
// logical or converted type), or nil when there is none.
func storedStamps(md *metadata.FileMetaData) map[int]*arrow.TimestampType {
	stored := storedSchema(md.KeyValueMetadata())
	if stored == nil {
		return nil
	}
	root := md.Schema.Root()
	if root.NumFields() != stored.NumFields() {
		return nil
	}
	var out map[int]*arrow.TimestampType
	for i := 0; i < root.NumFields(); i++ {
		p, ok := root.Field(i).(*schema.PrimitiveNode)
		ts, isTS := stored.Field(i).Type.(*arrow.TimestampType)
		if !ok || !isTS || p.Name() != stored.Field(i).Name || p.PhysicalType() != parquet.Types.Int64 ||
			p.RepetitionType() == parquet.Repetitions.Repeated {
			continue
		}
		if lt := p.LogicalType(); lt != nil && !lt.IsNone() {
			continue
		}
		if p.ConvertedType() != schema.ConvertedTypes.None {
			continue
		}
		if out == nil {
			out = map[int]*arrow.TimestampType{}
		}
		out[i] = ts
	}
	return out
}

// storedSchema decodes the Arrow schema a Parquet writer stored in the
// footer, as pqarrow does, or returns nil when there is none or it does not
// decode (checkStoredSchema has checked its bytes already).
func storedSchema(kv metadata.KeyValueMetadata) *arrow.Schema {
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*v)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return nil
		}
	}
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil
	}
	defer r.Release()
	return r.Schema()
}

// stampSchema returns s with the types of stamps.
func stampSchema(s *arrow.Schema, stamps map[int]*arrow.TimestampType) *arrow.Schema {
	if len(stamps) == 0 {
		return s
	}
	fields := s.Fields()
	for i, ts := range stamps {
		if i < len(fields) && fields[i].Type.ID() == arrow.INT64 {
			fields[i].Type = ts
		}
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// intDecimals returns, by top-level field, the Decimal32 or Decimal64 type
// of each decimal column of as (the file's Arrow schema) that the Parquet
// schema stores as INT32 (precision up to 9) or INT64 (up to 18), or nil
// when there is none.
//
// pqarrow decodes such a column into a Decimal128 array, converting each
// integer; read as the integers it stores (which pqarrow hands over
// without a copy) and given the Decimal32 or Decimal64 type of the same
// precision and scale, whose layout is theirs, it renders as the same
// text, from the integer.
func intDecimals(md *metadata.FileMetaData, as *arrow.Schema) map[int]arrow.DataType {
	root := md.Schema.Root()
	if root.NumFields() != as.NumFields() {
		return nil
	}
	var out map[int]arrow.DataType
	for i := 0; i < root.NumFields(); i++ {
		p, ok := root.Field(i).(*schema.PrimitiveNode)
		if !ok || p.RepetitionType() == parquet.Repetitions.Repeated {
			continue
		}
		dec, ok := as.Field(i).Type.(arrow.DecimalType)
		if !ok {
			continue
		}
		prec, scale := dec.GetPrecision(), dec.GetScale()
		var dt arrow.DataType
		switch {
		case p.PhysicalType() == parquet.Types.Int32 && prec >= 1 && prec <= 9:
			dt = &arrow.Decimal32Type{Precision: prec, Scale: scale}
		case p.PhysicalType() == parquet.Types.Int64 && prec >= 1 && prec <= 18:
			dt = &arrow.Decimal64Type{Precision: prec, Scale: scale}
		default:
			continue
		}
		if out == nil {
			out = map[int]arrow.DataType{}
		}
		out[i] = dt
	}
	return out
}

// stampUnit is a unit whose batches' integer columns of stored timestamps
// and decimals take their types (by place in the batch).
type stampUnit struct {
	unit
	stamps map[int]arrow.DataType
}

func (u *stampUnit) next() (arrow.RecordBatch, error) {
	rec, err := u.unit.next()
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	cols := make([]arrow.Array, rec.NumCols())
	fields := make([]arrow.Field, rec.NumCols())
	for i := range cols {
		cols[i], fields[i] = rec.Column(i), rec.Schema().Field(i)
		if dt, ok := u.stamps[i]; ok && sameWidth(cols[i].DataType(), dt) {
			cols[i] = retype(cols[i], dt)
			defer cols[i].Release()
			fields[i].Type = dt
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

// sameWidth reports whether an integer array of type from can take type
// to: both are 32-bit or both 64-bit values.
func sameWidth(from, to arrow.DataType) bool {
	switch to.ID() {
	case arrow.TIMESTAMP, arrow.DECIMAL64:
		return from.ID() == arrow.INT64
	case arrow.DECIMAL32:
		return from.ID() == arrow.INT32
	}
	return false
}

// stamped returns u, or u giving the stored timestamp types and the
// decimal types of decimals read as integers when there are.
func (s *parquetFile) stamped(u unit) unit {
	if len(s.stamps) == 0 && len(s.decimals) == 0 {
		return u
	}
	types := make(map[int]arrow.DataType, len(s.stamps)+len(s.decimals))
	for j, ts := range s.stamps {
		types[j] = ts
	}
	for i, dt := range s.decimals {
		j := i
		if s.keep != nil {
			var found bool
			if j, found = slices.BinarySearch(s.keep, i); !found {
				continue // not read
			}
		}
		types[j] = dt
	}
	return &stampUnit{unit: u, stamps: types}
}
