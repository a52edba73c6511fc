package reader

// Within one file only the last occurrence of a key is applied (with a
// version column, the newest version's, the last among equals). The plan
// pass of either wing keeps a 64-bit hash of each good row's key and returns
// the rows whose hash repeats; only when there are any, supersede reads the
// partitions that hold them again and compares the candidates' typed key
// values exactly. A hash collision thus costs a second look, never a row; a
// file whose keys do not repeat costs the hashing alone.

import (
	"context"
	"encoding/binary"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/keys"
)

// appendBatchKey appends the exact key of row i of a batch the reader
// built: the values the target receives, decimals by their number (1.5
// and 1.50 are one key), timestamps as their column stores them (lims,
// one per key column, nil where none: Limit.Time).
func appendBatchKey(dst []byte, rec arrow.RecordBatch, cols []int, lims []*Limit, i int, loose bool) []byte {
	for j, k := range cols {
		if a, ok := rec.Column(k).(*array.String); ok && idemtype.TypeOf(rec.Schema().Field(k)) == idemtype.Decimal {
			dst = keys.AppendDecimal(dst, []byte(a.Value(i)))
			continue
		}
		switch a := rec.Column(k).(type) {
		case *array.Int64:
			dst = binary.BigEndian.AppendUint64(append(dst, 'i'), uint64(a.Value(i)))
		case *array.Float64:
			f := a.Value(i)
			if f == 0 {
				f = 0 // -0 is 0
			}
			dst = binary.BigEndian.AppendUint64(append(dst, 'f'), math.Float64bits(f))
		case *array.Timestamp:
			v := int64(a.Value(i))
			if tt, ok := a.DataType().(*arrow.TimestampType); ok && tt.Unit == arrow.Microsecond {
				v = lims[j].Time(v)
			}
			dst = binary.BigEndian.AppendUint64(append(dst, 't'), uint64(v))
		case *array.Boolean:
			b := byte(0)
			if a.Value(i) {
				b = 1
			}
			dst = append(dst, 'b', b)
		case *array.String:
			if loose {
				dst = keys.AppendLoose(dst, []byte(a.Value(i)))
				continue
			}
			dst = keys.AppendBytes(dst, 's', []byte(a.Value(i)))
		default:
			dst = keys.AppendBytes(dst, 'x', []byte(a.ValueStr(i)))
		}
	}
	return dst
}

// supersede settles the candidate rows of a plan: it reads the partitions
// that hold them and records, in each partition's Superseded, the ordinals
// of the rows that lose to another row with the same key (Options.Key),
// comparing the keys' typed values. Memory: the exact keys of the
// candidates.
func (f *File) supersede(ctx context.Context, plan *Plan, cands []int64) error {
	if len(cands) == 0 {
		return nil
	}
	names := make([]string, len(plan.Schema))
	for i, c := range plan.Schema {
		names[i] = c.Name
	}
	cols := keys.Columns(names, f.f.Opts.Key)
	lims := make([]*Limit, len(cols))
	for j, k := range cols {
		if l, ok := f.f.Opts.Limits[names[k]]; ok {
			lims[j] = &l
		}
	}
	// The partitions that hold candidates. A text file is read once from
	// the first of them to the last: a compressed one cannot seek.
	var reads []Partition
	next := 0
	for _, p := range plan.Partitions {
		lo, _ := slices.BinarySearch(cands, p.First)
		if lo < len(cands) && cands[lo] < p.First+p.Rows {
			reads = append(reads, p)
		}
	}
	if f.text != nil && len(reads) > 1 {
		a, z := reads[0], reads[len(reads)-1]
		span := Partition{Index: a.Index, First: a.First, Rows: z.First + z.Rows - a.First, Offset: a.Offset, Length: z.Offset + z.Length - a.Offset}
		for _, q := range plan.Partitions[a.Index : z.Index+1] {
			span.Rejected += q.Rejected
		}
		reads = []Partition{span}
	}
	vcol := slices.Index(names, f.f.Opts.Version)
	type winner struct {
		ordinal int64
		version version
	}
	best := map[string]winner{} // exact key → its winning occurrence so far
	// loose key (keys.AppendLoose) → the first exact key of it: another
	// exact key of it is one a table's collation may compare as one.
	loosely := map[string]string{}
	var superseded []int64
	var buf, lbuf []byte
	for b, err := range f.batches(plan, reads, 4096, true) {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			b.Release()
			return err
		}
		for i, o := range b.Ordinals {
			for next < len(cands) && cands[next] < o {
				next++ // not returned: a bad row now, which the apply will find changed
			}
			if next == len(cands) || cands[next] != o {
				continue
			}
			next++
			buf = appendBatchKey(buf[:0], b.Record, cols, lims, i, false)
			if !plan.Loose {
				lbuf = appendBatchKey(lbuf[:0], b.Record, cols, lims, i, true)
				if exact, ok := loosely[string(lbuf)]; !ok {
					loosely[string(lbuf)] = string(buf)
				} else if exact != string(buf) {
					plan.Loose = true
					clear(loosely)
				}
			}
			w := winner{ordinal: o}
			if vcol >= 0 {
				w.version = versionOf(b.Record.Column(vcol), i)
			}
			prev, ok := best[string(buf)]
			switch {
			case !ok:
			case w.version.older(prev.version):
				superseded = append(superseded, o) // an older version never wins
				continue
			default:
				superseded = append(superseded, prev.ordinal)
			}
			best[string(buf)] = w
		}
		b.Release()
	}
	slices.Sort(superseded)
	plan.Superseded = int64(len(superseded))
	for i := range plan.Partitions {
		p := &plan.Partitions[i]
		lo, _ := slices.BinarySearch(superseded, p.First)
		hi, _ := slices.BinarySearch(superseded, p.First+p.Rows)
		if hi > lo {
			p.Superseded = slices.Clip(superseded[lo:hi])
		}
	}
	return nil
}

// version is a value of the version column, compared as the target
// compares it.
type version struct {
	set bool // false: NULL, or no version column
	i   int64
	f   float64
	s   string
}

func versionOf(a arrow.Array, i int) version {
	if a.IsNull(i) {
		return version{}
	}
	switch a := a.(type) {
	case *array.Int64:
		return version{set: true, i: a.Value(i)}
	case *array.Timestamp:
		return version{set: true, i: int64(a.Value(i))}
	case *array.Float64:
		return version{set: true, f: a.Value(i)}
	case *array.Boolean:
		if a.Value(i) {
			return version{set: true, i: 1}
		}
		return version{set: true}
	case *array.String:
		return version{set: true, s: a.Value(i)}
	}
	return version{set: true, s: a.ValueStr(i)}
}

// older reports whether v is older than w: NULL is older than any value.
func (v version) older(w version) bool {
	if !v.set || !w.set {
		return !v.set && w.set
	}
	return v.i < w.i || (v.i == w.i && (v.f < w.f || (v.f == w.f && v.s < w.s)))
}
