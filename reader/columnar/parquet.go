package columnar

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/value"
)

// A Parquet file is read one row group at a time. Its partitions are its
// row groups, or ranges of a large row group's rows (File.keep), and
// a partition's CRC is the CRC-32C of the row group's column chunks, in column order, exactly the byte ranges the decoder reads.
// Those bytes are read into memory and checked before the decoder sees
// them, and the decoder reads them from memory (see loaded): what is
// decoded is what was verified, and a partition reader reads no byte of
// another row group. The footer is read and parsed once, by Open; its
// parsed form is only read afterwards, so partition readers share it.

var parquetMagic = []byte("PAR1")

// parquetFile is an opened Parquet file.
type parquetFile struct {
	f      *File
	size   int64 // file size at Open
	md     *metadata.FileMetaData
	groups int
	// stamps are the stored Arrow timestamp types of the top-level
	// columns stored as bare INT64 (see storedStamps), by their place in
	// the record batches the decoders return.
	stamps map[int]*arrow.TimestampType
	// keep lists, in file order, the top-level fields the decoders read
	// (Options.Select; nil: all of them). See project.
	keep []int
	// decimals are, by top-level field, the Decimal32 or Decimal64 types
	// of the decimal columns stored as INT32 or INT64 (see intDecimals),
	// which the decoders read as those integers.
	decimals map[int]arrow.DataType
	// skip marks, by place in the record batches, the fields the plan
	// pass under way leaves undecoded (File.skipsAt); nil: none.
	skip []bool
	// dictPages counts the dictionary pages its pageChunks have read.
	dictPages atomic.Int64
	// pageBufs are the data page buffers its pageChunks lend each other.
	pageBufs pageBufs
}

func (s *parquetFile) unitName() string { return "row group" }

// openParquet reads a Parquet file's footer and maps its schema.
func (f *File) openParquet() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = f.recovered(v, "footer")
		}
	}()
	size := f.In.Size()
	notParquet := func(why string) error {
		return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: not a Parquet file: %s", input.ErrFormat, why)}
	}
	if size == 0 {
		return &input.ParseError{Path: f.Path, Offset: 0, Err: input.ErrEmpty}
	}
	if size < 12 {
		return notParquet(fmt.Sprintf("%d bytes is too short", size))
	}
	var head, tail [8]byte
	if err := f.readAt(head[:4], 0); err != nil {
		return err
	}
	if err := f.readAt(tail[:], size-8); err != nil {
		return err
	}
	if !bytes.Equal(head[:4], parquetMagic) {
		return notParquet("it does not start with PAR1")
	}
	switch {
	case bytes.Equal(tail[4:], []byte("PARE")):
		return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: encrypted Parquet files are not supported", input.ErrFormat)}
	case !bytes.Equal(tail[4:], parquetMagic):
		return notParquet("it does not end with PAR1 (truncated?)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n == 0 || n > size-12 {
		return &input.ParseError{Path: f.Path, Offset: size - 8, Err: fmt.Errorf("%w: corrupt footer: length %d in a file of %d bytes", input.ErrFormat, n, size)}
	}
	if n > maxFooterBytes { // checked before it is read: a sparse file can declare gigabytes
		return &input.ParseError{Path: f.Path, Offset: size - 8, Err: fmt.Errorf("%w: a footer of %d bytes is more than the %d MiB idemport reads (corrupt, or a file of too many columns and row groups)",
			input.ErrFormat, n, maxFooterBytes>>20)}
	}
	footer := make([]byte, n)
	if err := f.readAt(footer, size-8-n); err != nil {
		return err
	}
	if err := checkFooter(footer); err != nil {
		return &input.ParseError{Path: f.Path, Offset: size - 8 - n, Err: fmt.Errorf("%w: corrupt footer: %w", input.ErrFormat, err)}
	}
	md, err := f.parseFooter(footer, size)
	if err != nil {
		return err
	}
	src := &parquetFile{f: f, size: size, md: md, groups: md.NumRowGroups()}
	if err := checkStoredSchema(md.KeyValueMetadata()); err != nil {
		return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: corrupt footer: stored Arrow schema: %w", input.ErrFormat, err)}
	}
	props := pqarrow.ArrowReadProperties{}
	as, err := pqarrow.FromParquet(md.Schema, &props, md.KeyValueMetadata())
	if err != nil {
		return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: cannot map the Parquet schema: %w", input.ErrType, err)}
	}
	src.stamps = storedStamps(md)
	as = stampSchema(plainSchema(as), src.stamps)
	src.decimals = intDecimals(md, as)
	for k := 0; k < src.groups; k++ {
		if _, err := src.spans(md, k); err != nil {
			return err
		}
	}
	hints := make([]value.Type, as.NumFields())
	root := md.Schema.Root()
	for i := range hints {
		if i >= root.NumFields() {
			break
		}
		if p, ok := root.Field(i).(*schema.PrimitiveNode); ok {
			switch p.LogicalType().(type) {
			case schema.JSONLogicalType:
				hints[i] = value.JSON
			case schema.EnumLogicalType:
				hints[i] = value.String
			}
		}
	}
	if f.cols, f.schema, err = f.arrowColumns(as, hints); err != nil {
		return err
	}
	f.units = src
	return nil
}

// readAt reads exactly len(p) bytes at off, counting them.
func (f *File) readAt(p []byte, off int64) error {
	n, err := f.In.ReadAt(p, off)
	f.Stats.Bytes.Add(int64(n))
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &input.ParseError{Path: f.Path, Offset: off + int64(n), Err: fmt.Errorf("read: %w", err)}
}

// parseFooter parses a Parquet footer.
func (f *File) parseFooter(footer []byte, size int64) (*metadata.FileMetaData, error) {
	md, err := metadata.NewFileMetaData(footer, nil)
	if err != nil {
		return nil, &input.ParseError{Path: f.Path, Offset: size - 8 - int64(len(footer)), Err: fmt.Errorf("%w: corrupt footer: %w", input.ErrFormat, err)}
	}
	if md.IsSetEncryptionAlgorithm() {
		return nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: encrypted Parquet files are not supported", input.ErrFormat)}
	}
	md.SetSourceFileSize(size)
	return md, nil
}

// spans returns the byte ranges of row group k's column chunks, computed as
// the decoder computes them (file.RowGroupReader.GetColumnPageReader).
func (s *parquetFile) spans(md *metadata.FileMetaData, k int) ([]span64, error) {
	where := fmt.Sprintf("row group %d", k)
	bad := func(format string, args ...any) error {
		return &input.ParseError{Path: s.f.Path, Offset: -1, Err: fmt.Errorf("%w: corrupt footer: %s: %s", input.ErrFormat, where, fmt.Sprintf(format, args...))}
	}
	rg := md.RowGroup(k)
	if rg.NumRows() < 0 {
		return nil, bad("%d rows", rg.NumRows())
	}
	if rg.NumRows() == 0 {
		return nil, nil // never read: writers leave odd offsets in empty row groups
	}
	if rg.NumColumns() != md.Schema.NumColumns() {
		return nil, bad("%d column chunks for %d columns", rg.NumColumns(), md.Schema.NumColumns())
	}
	old := md.WriterVersion().LessThan(metadata.Parquet816FixedVersion)
	out := make([]span64, 0, rg.NumColumns())
	for i := 0; i < rg.NumColumns(); i++ {
		col, err := rg.ColumnChunk(i)
		if err != nil {
			return nil, bad("column %d: %v", i, err)
		}
		if col.FilePath() != "" {
			return nil, &input.ParseError{Path: s.f.Path, Offset: -1, Err: fmt.Errorf("%w: %s: column chunks in other files are not supported", input.ErrFormat, where)}
		}
		if col.CryptoMetadata() != nil {
			return nil, &input.ParseError{Path: s.f.Path, Offset: -1, Err: fmt.Errorf("%w: %s: encrypted columns are not supported", input.ErrFormat, where)}
		}
		start := col.DataPageOffset()
		if col.HasDictionaryPage() && col.DictionaryPageOffset() > 0 && start > col.DictionaryPageOffset() {
			start = col.DictionaryPageOffset()
		}
		n := col.TotalCompressedSize()
		if start < 0 || n < 0 || start > s.size || n > s.size-start || (n > 0 && start < 4) {
			return nil, bad("column %d's chunk at byte %d, %d bytes long, is outside the file", i, start, n)
		}
		if old {
			n += min(100, s.size-(start+n)) // PARQUET-816, as the decoder pads
		}
		out = append(out, span64{off: start, len: n})
	}
	return out, nil
}

// reader returns a decoder that reads the bytes in ld, in batches of
// batchRows rows; reserve says it may reserve their string bytes ahead
// (see reserves).
func (s *parquetFile) reader(md *metadata.FileMetaData, ld *loaded, batchRows int, reserve bool) (*pqarrow.FileReader, error) {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	// The chunks are in memory already: stream them rather than copy them.
	props.BufferedStreamEnabled = true
	rdr, err := file.NewParquetReader(ld, file.WithMetadata(md), file.WithReadProps(props))
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: int64(batchRows), PreAllocBinaryData: reserve}, s.f.Opts.Allocator)
	if err != nil {
		return nil, err
	}
	for i := range fr.Manifest.Fields {
		if fld := fr.Manifest.Fields[i].Field; fld != nil && fr.Manifest.Fields[i].IsLeaf() {
			if dt, ok := s.decimals[i]; ok {
				stored := *fld
				stored.Type = arrow.PrimitiveTypes.Int64
				if dt.ID() == arrow.DECIMAL32 {
					stored.Type = arrow.PrimitiveTypes.Int32
				}
				fr.Manifest.Fields[i].Field = &stored
			}
			if dt := plainType(fld.Type); dt != fld.Type {
				plain := *fld
				plain.Type = dt
				fr.Manifest.Fields[i].Field = &plain
			}
		}
	}
	return fr, nil
}

// maxReserve bounds the string bytes the decoders reserve ahead for one
// batch of a row group (see reserves).
const maxReserve = 64 << 20

// reserves reports whether decoders of batches of batchRows rows may
// reserve each batch's string bytes ahead (pqarrow's PreAllocBinaryData)
// when they read row groups groups (none: all of them). A decoder then
// reserves, for each string column, the batch's share of its chunk's
// uncompressed size: a buffer filled as the values are copied in, where
// one grown by doubling cost 160 MB more allocations and 4-5% more CPU
// time on a million rows of orders. The footer states those sizes, and a
// reservation of a hostile file's claim (a terabyte, or a product past
// int64) would end the process, or fail it: the sizes of a batch's
// chunks must come to at most maxReserve.
func (s *parquetFile) reserves(batchRows int, groups ...int) bool {
	if groups == nil {
		for k := 0; k < s.groups; k++ {
			groups = append(groups, k)
		}
	}
	for _, k := range groups {
		rg := s.md.RowGroup(k)
		rows := rg.NumRows()
		if rows <= 0 {
			continue
		}
		batch := float64(min(int64(batchRows), rows))
		var sum float64
		for i := 0; i < rg.NumColumns(); i++ {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				return false
			}
			size := float64(cc.TotalUncompressedSize())
			if size < 0 || size*batch >= 1<<62 { // the decoder's size*batch/rows is in int64
				return false
			}
			sum += size * batch / float64(rows)
		}
		if sum > maxReserve {
			return false
		}
	}
	return true
}

// plainType returns the value type of dt when dt is a dictionary of
// strings or binary values, else dt.
//
// A Parquet column that a writer stored as an Arrow dictionary (pandas'
// and Polars' categoricals) would be decoded into a dictionary array:
// every dictionary page's values hashed into a memo table and each value
// looked up in it, twice per import (the plan pass and the partition
// reader), only for the converter to copy the values out again. Read as
// plain strings, the decoder copies each value once from the page's
// dictionary, and the array is the converter's output as it is.
func plainType(dt arrow.DataType) arrow.DataType {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		switch d.ValueType.ID() {
		case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
			return d.ValueType
		}
	}
	return dt
}

// plainSchema returns s with the types of its top-level columns as
// plainType makes them, the schema of the record batches reader's
// decoders return.
func plainSchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i, f := range fields {
		fields[i].Type = plainType(f.Type)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// batchRows returns at most n: the rows of row group k that fit in
// partition.BatchBytes of its uncompressed data, or 1 when one row is larger.
func (s *parquetFile) batchRows(k, n int) int {
	rg := s.md.RowGroup(k)
	if rows, size := rg.NumRows(), rg.TotalByteSize(); rows > 0 && size > 0 {
		per := max(size/rows, 1)
		n = int(min(int64(n), max(partition.BatchBytes/per, 1)))
	}
	return n
}

func (s *parquetFile) units() int64 { return int64(s.groups) }

func (s *parquetFile) unitRows(k int64) (int64, error) { return s.md.RowGroup(int(k)).NumRows(), nil }

// whole reports whether partition p is a whole row group, and the group's
// uncompressed size.
func (s *parquetFile) whole(p idemtype.Partition) (int64, bool) {
	if p.Offset < 0 || p.Offset >= int64(s.groups) || p.Length != 1 {
		return 0, false
	}
	rg := s.md.RowGroup(int(p.Offset))
	return rg.TotalByteSize(), rg.NumRows() == p.Rows
}

// load reads row group k's chunks into ld and returns their CRC-32C.
func (s *parquetFile) load(md *metadata.FileMetaData, ld *loaded, k int) (uint32, error) {
	spans, err := s.spans(md, k)
	if err != nil {
		return 0, err
	}
	ld.reset(nil)
	return ld.load(s.f, fmt.Sprintf("row group %d", k), spans, 0)
}

// project makes the decoders read only the top-level fields at proj
// (Options.Select) and returns where each of them is in the record batches
// they then return. The other columns' chunks are still read and checked
// against the plan's CRC, but their pages are never decompressed or
// decoded. A file with a nested column is decoded whole, and proj comes
// back as it is.
func (s *parquetFile) project(proj []int) []int {
	root := s.md.Schema.Root()
	for i := 0; i < root.NumFields(); i++ {
		if _, ok := root.Field(i).(*schema.PrimitiveNode); !ok {
			return proj // a leaf's column index is its field's only when all are flat
		}
	}
	keep := slices.Compact(slices.Sorted(slices.Values(proj)))
	at := make([]int, len(proj))
	for j, i := range proj {
		at[j], _ = slices.BinarySearch(keep, i)
	}
	stamps := map[int]*arrow.TimestampType{}
	for j, i := range keep {
		if ts, ok := s.stamps[i]; ok {
			stamps[j] = ts
		}
	}
	s.keep, s.stamps = keep, stamps
	return at
}

// records opens a record reader over row group k, whose bytes are loaded.
func (s *parquetFile) records(fr *pqarrow.FileReader, k int) (*pqUnit, error) {
	s.f.Stats.Groups.Add(1)
	rr, err := fr.GetRecordReader(context.Background(), s.keep, []int{k})
	if err != nil {
		return nil, s.f.unitError(err, fmt.Sprintf("row group %d", k))
	}
	return &pqUnit{rr: rr}, nil
}

func (s *parquetFile) scan(ctx context.Context, o partition.ScanOptions, fn func(p idemtype.Partition, u unit) error) error {
	md := s.md
	ld := &loaded{size: s.size}
	batch := planBatchRows
	for k := 0; k < s.groups; k++ {
		batch = s.batchRows(k, batch)
	}
	reserve := s.reserves(batch)
	fr, err := s.reader(md, ld, batch, reserve)
	if err != nil {
		return s.f.unitError(err, "footer")
	}
	// A second decoder, for half the columns, over the same loaded bytes.
	view := &loaded{size: s.size}
	frB, err := s.reader(md, view, batch, reserve)
	if err != nil {
		return s.f.unitError(err, "footer")
	}
	last := -1 // the last row group with rows, whose bytes are left for its partition reader
	for k := 0; k < s.groups; k++ {
		if md.RowGroup(k).NumRows() > 0 {
			last = k
		}
	}
	for k := 0; k < s.groups; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if md.RowGroup(k).NumRows() == 0 {
			continue // no partition: nothing to read
		}
		crc, err := s.load(md, ld, k)
		if err != nil {
			return err
		}
		view.ranges = ld.ranges
		u, err := s.planUnit(ld, fr, frB, k, batch, o.SecondCore)
		if err != nil {
			return err
		}
		split, _ := u.(*splitUnit)
		u = s.stamped(u)
		err = func() error {
			defer u.close()
			return fn(idemtype.Partition{Rows: md.RowGroup(k).NumRows(), Offset: int64(k), Length: 1, CRC: crc}, u)
		}()
		if err != nil {
			return err
		}
		if split != nil && k != last {
			s.f.dicts.leave(int64(k), crc, split.dictionaries())
		}
		if k == last {
			// Its bytes, and the dictionaries read from them, which its
			// partition reader takes rather than decompress and walk
			// them again.
			left := &planned{unit: int64(k), units: 1, crc: crc, ranges: slices.Clone(ld.ranges)}
			if split != nil {
				left.chunkDicts = split.dictionaries()
			}
			s.f.left.leave(left)
		}
	}
	return nil
}

func (s *parquetFile) open(p idemtype.Partition, batchRows int) (unit, error) {
	where := s.f.where("row group", p)
	if p.Offset < 0 || p.Offset >= int64(s.groups) || p.Length < 1 {
		return nil, &input.ParseError{Path: s.f.Path, Offset: -1,
			Err: fmt.Errorf("%w: the plan's partition %d is row group %d (+%d), the file has %d row groups", input.ErrSourceChanged, p.Index, p.Offset, p.Length, s.groups)}
	}
	k := int(p.Offset)
	md := s.md
	// A partition may be a range of the group's rows (File.keep): the
	// group holds at least its rows and those before it. The CRC is the
	// whole group's, so a group that changed is caught below.
	if n := md.RowGroup(k).NumRows(); n < p.Rows+skipped(p) {
		return nil, &input.ParseError{Path: s.f.Path, Offset: -1,
			Err: fmt.Errorf("%w: %s has %d rows, the plan says %d", input.ErrSourceChanged, where, n, p.Rows+skipped(p))}
	}
	ld := &loaded{size: s.size}
	var dicts map[int]*chunkDict
	if left := s.f.left.take(int64(k), 1, p.CRC); left != nil {
		ld.ranges = left.ranges // the plan pass's bytes, its CRC the plan's
		dicts = left.chunkDicts // and the dictionaries read from them
	} else {
		crc, err := s.load(md, ld, k)
		if err != nil {
			return nil, err
		}
		if crc != p.CRC {
			return nil, &input.ParseError{Path: s.f.Path, Offset: -1,
				Err: fmt.Errorf("%w: %s's bytes differ from the plan", input.ErrSourceChanged, where)}
		}
		// The dictionaries the plan pass read from bytes of the plan's
		// CRC, these bytes.
		dicts = s.f.dicts.take(int64(k), p.CRC)
	}
	batchRows = s.batchRows(k, batchRows)
	fr, err := s.reader(md, ld, batchRows, s.reserves(batchRows, k))
	if err != nil {
		return nil, s.f.unitError(err, where)
	}
	u, err := s.unitOf(ld, fr, nil, k, batchRows, nil, nil, dicts)
	if err != nil {
		return nil, err
	}
	return s.stamped(u), nil
}

// pqUnit yields the record batches of one row group.
type pqUnit struct {
	rr pqarrow.RecordReader
}

func (u *pqUnit) next() (arrow.RecordBatch, error) {
	if !u.rr.Next() {
		if err := u.rr.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	rec := u.rr.RecordBatch()
	rec.Retain()
	return rec, nil
}

func (u *pqUnit) close() { u.rr.Release() }

// checkStoredSchema checks the Arrow schema a Parquet writer may store in
// the footer (as pqarrow finds it) before pqarrow decodes it.
func checkStoredSchema(kv metadata.KeyValueMetadata) error {
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var b []byte
	var err error
	if len(*v)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(b) == 0 || err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return nil // pqarrow reports it
		}
	}
	return checkEncapsulated(b)
}
