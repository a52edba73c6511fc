package columnar

import (
	"bytes"
	"encoding/base64"

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

// stampUnit is a unit whose batches' bare INT64 columns of stored
// timestamps take their stored type.
type stampUnit struct {
	unit
	stamps map[int]*arrow.TimestampType
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
		if ts, ok := u.stamps[i]; ok && cols[i].DataType().ID() == arrow.INT64 {
			cols[i] = retype(cols[i], ts)
			defer cols[i].Release()
			fields[i].Type = ts
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

// stamped returns u, or u giving the stored timestamp types when there are.
func (s *parquetFile) stamped(u unit) unit {
	if len(s.stamps) == 0 {
		return u
	}
	return &stampUnit{unit: u, stamps: s.stamps}
}
