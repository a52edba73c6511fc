package columnar

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
)

// An Arrow IPC file (Feather v2) is read by random access. Its footer
// lists the file blocks of its dictionaries and record batches. A
// partition is a run of record batches, as in a stream (below), read
// alone: its CRC is the CRC-32C of the bytes of every dictionary block
// followed by those of its record batch blocks, the exact bytes its values
// are decoded from, checked cheaply (CRC-32C runs at memory speed). As for
// Parquet, the blocks are read into memory and checked before the decoder
// reads them from there; the record batches are then decoded one at a
// time, as a stream of the file's messages (a schema message made of the
// footer's schema, the dictionaries, the record batches) whose bytes are
// handed to the decoder as they lie in memory (blockMessages): arrow-go's
// file reader copies each message's body out of the bytes it reads, and a
// record batch of a million rows from Arrow JS, 108 MB, was then held
// twice.
//
// An Arrow IPC stream can only be read from its start. Its record batches
// are often small (a writer flushing as rows arrive), so a partition is a
// run of them: it ends with the record batch that brings it to
// ScanOptions.PartitionRows rows or PartitionBytes bytes. Its Offset is
// its first record batch, Length is 1 plus the rows before the table
// (Options.SkipLines) it starts with, and its CRC covers the messages from
// the end of the record batch before it to the end of its last (its
// dictionaries or their replacements and deltas, and its record batches).
// A partition reader opened alone re-reads the stream up to its first
// record batch, passing over those before it without decoding them; one
// that read its partition to the end leaves the stream, positioned at the
// next partition, for that partition's reader (File.keep), so partitions
// read in order read the stream once. The reader reads the messages itself
// (messages), so that each is checked before arrow-go decodes it; a
// partition's bytes are checked against its CRC as its last record batch
// is read, before its reader reports its end.

var ipcMagic = []byte("ARROW1")

// ipcFile is an opened Arrow IPC file.
type ipcFile struct {
	f      *File
	size   int64
	tail   loadedRange // the footer, its length and the closing magic
	head   []byte      // a Schema message of the footer's schema (schemaMessage)
	dicts  []ipcBlock
	blocks []ipcBlock
	schema *arrow.Schema

	// verified holds the footer's and the dictionaries' bytes, and their
	// CRC-32C, once a partition read with them matched its plan's CRC:
	// later partitions reuse them instead of reading and checksumming
	// every dictionary again (a file's dictionaries can be larger than a
	// record batch). What is decoded is still what the plan checksummed.
	mu          sync.Mutex
	verified    []loadedRange
	verifiedCRC uint32
}

// ipcBlock is a file block of an IPC file: an encapsulated message, meta
// bytes of metadata then body bytes.
type ipcBlock struct{ off, meta, body int64 }

func (b ipcBlock) span() span64 { return span64{off: b.off, len: b.meta + b.body} }

func spans(blocks []ipcBlock) []span64 {
	out := make([]span64, len(blocks))
	for i, b := range blocks {
		out[i] = b.span()
	}
	return out
}

// checkBlocks checks the messages of loaded blocks before the decoder
// reads them.
func (s *ipcFile) checkBlocks(ld *loaded, what string, blocks []ipcBlock) error {
	for i, b := range blocks {
		raw := ld.bytes(b.off, b.meta+b.body)
		meta, err := messageMeta(raw[:b.meta])
		if err == nil {
			err = checkMessage(meta)
		}
		if err == nil {
			err = checkBody(meta, raw[b.meta:])
		}
		if err != nil {
			name := what
			if len(blocks) > 1 {
				name = fmt.Sprintf("%s %d", what, i)
			}
			return &input.ParseError{Path: s.f.Path, Offset: b.off, Err: fmt.Errorf("%w: %s: %w", input.ErrFormat, name, err)}
		}
	}
	return nil
}

func (s *ipcFile) unitName() string { return "record batch" }

// openIPCFile reads an Arrow IPC file's footer and schema.
func (f *File) openIPCFile() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = f.recovered(v, "footer")
		}
	}()
	size := f.In.Size()
	notArrow := func(why string) error {
		return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: not an Arrow IPC file: %s", input.ErrFormat, why)}
	}
	if size == 0 {
		return &input.ParseError{Path: f.Path, Offset: 0, Err: input.ErrEmpty}
	}
	if size < 8+10 {
		return notArrow(fmt.Sprintf("%d bytes is too short", size))
	}
	var head [6]byte
	var end [10]byte
	if err := f.readAt(head[:], 0); err != nil {
		return err
	}
	if err := f.readAt(end[:], size-10); err != nil {
		return err
	}
	if !bytes.Equal(head[:], ipcMagic) {
		if bytes.Equal(head[:4], []byte("FEA1")) {
			return notArrow("it is a Feather version 1 file; convert it to Feather version 2 (Arrow IPC)")
		}
		return notArrow("it does not start with ARROW1 (an Arrow IPC stream needs the .arrows extension)")
	}
	if !bytes.Equal(end[4:], ipcMagic) {
		return notArrow("it does not end with ARROW1 (truncated?)")
	}
	n := int64(int32(binary.LittleEndian.Uint32(end[:4])))
	if n <= 0 || n > size-8-10 {
		return &input.ParseError{Path: f.Path, Offset: size - 10, Err: fmt.Errorf("%w: corrupt footer: length %d in a file of %d bytes", input.ErrFormat, n, size)}
	}
	if n > maxFooterBytes { // checked before it is read: a sparse file can declare gigabytes
		return &input.ParseError{Path: f.Path, Offset: size - 10, Err: fmt.Errorf("%w: a footer of %d bytes is more than the %d MiB idemport reads (corrupt, or a file of too many record batches)",
			input.ErrFormat, n, maxFooterBytes>>20)}
	}
	tail := make([]byte, n+10)
	if err := f.readAt(tail, size-10-n); err != nil {
		return err
	}
	s := &ipcFile{f: f, size: size, tail: loadedRange{off: size - 10 - n, data: tail}}
	if s.dicts, s.blocks, err = ipcBlocks(tail[:n], size-10-n); err == nil {
		err = checkFooterSchema(tail[:n])
	}
	if err != nil {
		return &input.ParseError{Path: f.Path, Offset: size - 10 - n, Err: fmt.Errorf("%w: corrupt footer: %w", input.ErrFormat, err)}
	}
	if s.head, err = schemaMessage(tail[:n]); err != nil {
		return &input.ParseError{Path: f.Path, Offset: size - 10 - n, Err: fmt.Errorf("%w: corrupt footer: %w", input.ErrFormat, err)}
	}
	// The schema as the decoders read it, from the footer's alone: the
	// dictionaries are read, checked and decoded by the plan pass and the
	// partition readers (arrow-go's file reader would read and copy them
	// all here, only to give the schema).
	m := &blockMessages{head: s.head}
	m.refs.Add(1)
	rdr, err := ipc.NewReaderFromMessageReader(m, ipc.WithAllocator(f.Opts.Allocator))
	if err != nil {
		return &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %w", input.ErrFormat, err)}
	}
	s.schema = rdr.Schema()
	rdr.Release()
	if f.cols, f.schema, err = f.arrowColumns(s.schema, nil); err != nil {
		return err
	}
	f.units = s
	return nil
}

// ipcBlocks reads the dictionary and record batch blocks of an Arrow IPC
// file's footer, a flatbuffer table Footer{version, schema, dictionaries:
// [Block], recordBatches: [Block]} with Block{offset: long,
// metaDataLength: int, bodyLength: long}. Blocks must lie before the
// footer, which starts at limit.
func ipcBlocks(buf []byte, limit int64) (dicts, batches []ipcBlock, err error) {
	u32 := func(at int64) (int64, error) {
		if at < 0 || at+4 > int64(len(buf)) {
			return 0, fmt.Errorf("offset %d is outside the footer", at)
		}
		return int64(binary.LittleEndian.Uint32(buf[at:])), nil
	}
	table, err := u32(0)
	if err != nil {
		return nil, nil, err
	}
	soff, err := u32(table)
	if err != nil {
		return nil, nil, err
	}
	vtable := table - int64(int32(soff))
	if vtable < 0 || vtable+4 > int64(len(buf)) {
		return nil, nil, fmt.Errorf("vtable at %d is outside the footer", vtable)
	}
	vsize := int64(binary.LittleEndian.Uint16(buf[vtable:]))
	vector := func(field int64) ([]ipcBlock, error) {
		at := 4 + 2*field
		if at+2 > vsize || vtable+at+2 > int64(len(buf)) {
			return nil, nil // absent
		}
		o := int64(binary.LittleEndian.Uint16(buf[vtable+at:]))
		if o == 0 {
			return nil, nil
		}
		rel, err := u32(table + o)
		if err != nil {
			return nil, err
		}
		vec := table + o + rel
		n, err := u32(vec)
		if err != nil {
			return nil, err
		}
		if n > (int64(len(buf))-vec-4)/24 {
			return nil, fmt.Errorf("%d blocks do not fit in the footer", n)
		}
		out := make([]ipcBlock, n)
		for i := range out {
			b := buf[vec+4+24*int64(i):]
			off := int64(binary.LittleEndian.Uint64(b))
			meta := int64(int32(binary.LittleEndian.Uint32(b[8:])))
			body := int64(binary.LittleEndian.Uint64(b[16:]))
			if off < 8 || meta < 8 || body < 0 || off > limit || meta > limit-off || body > limit-off-meta {
				return nil, fmt.Errorf("block %d at byte %d (%d+%d bytes) is outside the data", i, off, meta, body)
			}
			if meta > maxMessageMeta+8 { // its marker, its length and its flatbuffer
				return nil, fmt.Errorf("block %d declares %d bytes of metadata, more than %d MiB", i, meta, maxMessageMeta>>20)
			}
			out[i] = ipcBlock{off: off, meta: meta, body: body}
		}
		return out, nil
	}
	if dicts, err = vector(2); err != nil {
		return nil, nil, err
	}
	if batches, err = vector(3); err != nil {
		return nil, nil, err
	}
	return dicts, batches, nil
}

// loadDicts returns a loaded holding the footer and every dictionary, and
// the CRC-32C of the dictionaries.
func (s *ipcFile) loadDicts() (*loaded, uint32, error) {
	ld := &loaded{size: s.size, ranges: []loadedRange{s.tail}}
	crc, err := ld.load(s.f, "dictionaries", spans(s.dicts), 0)
	if err != nil {
		return nil, 0, err
	}
	return ld, crc, s.checkBlocks(ld, "dictionary", s.dicts)
}

// scan reads the file's record batches in order, holding those of a
// partition until it ends: like a stream's, an IPC file's partitions are
// runs of its record batches, each ending with the batch that brings it to
// o.PartitionRows rows or o.PartitionBytes bytes (a writer of small
// batches would otherwise make a transaction of each).
func (s *ipcFile) scan(ctx context.Context, o partition.ScanOptions, fn func(p idemtype.Partition, u unit) error) error {
	ld, dictCRC, err := s.loadDicts()
	if err != nil {
		return err
	}
	base := append([]loadedRange(nil), ld.ranges...)
	u, err := s.batches(ld, s.blocks, "schema")
	if err != nil {
		return err
	}
	defer u.close()
	part := &batchList{}
	defer part.close()
	var p idemtype.Partition
	var size int64
	var loads []loadedRange // the bytes of the partition's record batches
	flush := func(k int) error {
		u := part
		part = &batchList{}
		defer u.close()
		if err := fn(p, u); err != nil {
			return err
		}
		if k == len(s.blocks)-1 { // the last partition: its bytes are left for its reader
			ranges := append(slices.Clone(base), loads...)
			sort.SliceStable(ranges, func(i, j int) bool { return ranges[i].off < ranges[j].off })
			s.f.left.leave(&planned{unit: p.Offset, units: len(loads), crc: p.CRC, ranges: ranges, dicts: base, dictCRC: dictCRC})
		}
		return nil
	}
	for k, b := range s.blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		ld.reset(base)
		where := fmt.Sprintf("record batch %d", k)
		if len(part.recs) > 0 {
			// A record batch that the planner cuts into ranges of its
			// rows (see planner.unit) is a partition of its own.
			rows, err := s.batchRows(b)
			if err != nil {
				return &input.ParseError{Path: s.f.Path, Offset: b.off, Err: fmt.Errorf("%w: %s: %w", input.ErrFormat, where, err)}
			}
			if rows >= 2*o.PartitionRows {
				if err := flush(k - 1); err != nil {
					return err
				}
			}
		}
		if len(part.recs) == 0 {
			p, size, loads = idemtype.Partition{Offset: int64(k), Length: 1, CRC: dictCRC}, 0, nil
		}
		crc, err := ld.load(s.f, where, []span64{b.span()}, p.CRC) // the dictionaries', then the partition's batches'
		if err != nil {
			return err
		}
		for _, r := range ld.ranges {
			if r.off == b.off {
				loads = append(loads, r)
			}
		}
		if err := s.checkBlocks(ld, where, s.blocks[k:k+1]); err != nil {
			return err
		}
		u.where = where
		rec, err := u.next()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // not with blocks listed
		}
		if err != nil {
			return s.f.unitError(err, where)
		}
		part.recs = append(part.recs, rec)
		p.Rows += rec.NumRows()
		p.CRC = crc
		if size += b.meta + b.body; p.Rows >= o.PartitionRows || size >= o.PartitionBytes {
			if err := flush(k); err != nil {
				return err
			}
		}
	}
	if len(part.recs) > 0 {
		return flush(len(s.blocks) - 1)
	}
	return nil
}

func (s *ipcFile) units() int64 { return int64(len(s.blocks)) }

func (s *ipcFile) unitRows(k int64) (int64, error) { return s.batchRows(s.blocks[k]) }

// batchRows returns the rows of the record batch in block b, from its
// message's metadata alone.
func (s *ipcFile) batchRows(b ipcBlock) (int64, error) {
	raw := make([]byte, b.meta)
	if err := s.f.readAt(raw, b.off); err != nil {
		return 0, err
	}
	meta, err := messageMeta(raw)
	if err == nil {
		err = checkMessage(meta)
	}
	if err != nil {
		return 0, err
	}
	m, err := (&fbCheck{buf: meta}).root()
	if err != nil {
		return 0, err
	}
	if kind, err := m.u8(1); err != nil || kind != fbHeaderRecords {
		return 0, fmt.Errorf("%w: block at byte %d is not a record batch", errFlatbuffer, b.off)
	}
	h, _, err := m.sub(2)
	if err != nil {
		return 0, err
	}
	return h.i64(0)
}

// open reads the record batches of partition p: the run of them from
// record batch p.Offset that holds its rows, as their metadata count them.
// Their bytes, after the dictionaries', are read and checked against p's
// CRC before any is decoded; they are decoded one at a time.
func (s *ipcFile) open(p idemtype.Partition, _ int) (unit, error) {
	where := s.f.where("record batch", p)
	if p.Offset < 0 || p.Offset >= int64(len(s.blocks)) || p.Length < 1 {
		return nil, &input.ParseError{Path: s.f.Path, Offset: -1,
			Err: fmt.Errorf("%w: the plan's partition %d is record batch %d (+%d), the file has %d", input.ErrSourceChanged, p.Index, p.Offset, p.Length, len(s.blocks))}
	}
	k, n := int(p.Offset), 0
	for rows := int64(0); rows < p.Rows+skipped(p); n++ {
		if k+n == len(s.blocks) {
			return nil, &input.ParseError{Path: s.f.Path, Offset: -1,
				Err: fmt.Errorf("%w: the file ends before the %d rows of %s", input.ErrSourceChanged, p.Rows+skipped(p), where)}
		}
		r, err := s.batchRows(s.blocks[k+n])
		if err != nil {
			return nil, &input.ParseError{Path: s.f.Path, Offset: s.blocks[k+n].off, Err: fmt.Errorf("%w: %s: %w", input.ErrFormat, where, err)}
		}
		rows += r
	}
	var ld *loaded
	var dicts []loadedRange
	var dictCRC uint32
	if left := s.f.left.take(int64(k), n, p.CRC); left != nil {
		// The plan pass's bytes, its CRC the plan's.
		ld, dicts, dictCRC = &loaded{size: s.size, ranges: left.ranges}, left.dicts, left.dictCRC
	} else {
		s.mu.Lock()
		dicts, dictCRC = s.verified, s.verifiedCRC
		s.mu.Unlock()
		ld = &loaded{size: s.size, ranges: slices.Clone(dicts)} // load appends to its ranges
		if dicts == nil {
			var err error
			if ld, dictCRC, err = s.loadDicts(); err != nil {
				return nil, err
			}
			dicts = slices.Clone(ld.ranges)
		}
		crc, err := ld.load(s.f, where, spans(s.blocks[k:k+n]), dictCRC)
		if err != nil {
			return nil, err
		}
		if crc != p.CRC {
			return nil, &input.ParseError{Path: s.f.Path, Offset: s.blocks[k].off,
				Err: fmt.Errorf("%w: %s's bytes differ from the plan", input.ErrSourceChanged, where)}
		}
	}
	if err := s.checkBlocks(ld, where, s.blocks[k:k+n]); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.verified == nil {
		s.verified, s.verifiedCRC = dicts, dictCRC
	}
	s.mu.Unlock()
	return s.batches(ld, s.blocks[k:k+n], where)
}

// schemaMessage returns the flatbuffer of a Schema message holding the
// schema of footer, an IPC file's footer (checked): the message a stream
// starts with, for arrow-go's stream reader to decode the file's record
// batches with the footer's schema and dictionary ids. It is built rather
// than read because not every writer starts a file's data with it (Arrow
// JS does not). The footer is copied whole after a Message table
// {version: the footer's, header_type: Schema, header: the footer's
// schema, bodyLength: 0}: a flatbuffer's offsets are relative, so the
// schema's own stay valid.
func schemaMessage(footer []byte) ([]byte, error) {
	f, err := (&fbCheck{buf: footer}).root()
	if err != nil {
		return nil, err
	}
	schema, ok, err := f.ref(1)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: footer without a schema (%v)", errFlatbuffer, err)
	}
	var version uint16
	if at, ok := f.field(0); ok && at+2 <= len(footer) {
		version = binary.LittleEndian.Uint16(footer[at:])
	}
	const vtable, table, data = 4, 16, 40 // the footer's copy at data, 8-aligned
	buf := make([]byte, data+len(footer))
	le := binary.LittleEndian
	le.PutUint32(buf[0:], table)
	for i, v := range []uint16{12, 20, 16, 18, 4, 8} { // sizes; version, header_type, header, bodyLength
		le.PutUint16(buf[vtable+2*i:], v)
	}
	le.PutUint32(buf[table:], table-vtable)
	le.PutUint32(buf[table+4:], uint32(data+schema-(table+4)))
	le.PutUint16(buf[table+16:], version)
	buf[table+18] = fbHeaderSchema
	copy(buf[data:], footer)
	return buf, checkMessage(buf)
}

// batches returns a unit decoding the record batches in blocks, whose bytes
// (as the dictionaries', see loadDicts) ld holds, or will hold, each by the
// time its batch is asked for. The decoder is arrow-go's stream reader
// over the file's messages (blockMessages).
func (s *ipcFile) batches(ld *loaded, blocks []ipcBlock, where string) (*fileBatches, error) {
	list := make([]ipcBlock, 0, len(s.dicts)+len(blocks))
	list = append(append(list, s.dicts...), blocks...)
	m := &blockMessages{ld: ld, head: s.head, list: list, batches: len(s.dicts)}
	m.refs.Add(1)
	rdr, err := ipc.NewReaderFromMessageReader(m, ipc.WithAllocator(s.f.Opts.Allocator))
	if err != nil {
		return nil, s.f.unitError(err, where)
	}
	// The schema Open decoded from the same message, whose columns it
	// mapped: a guard that the decoder reads those columns.
	if !rdr.Schema().Equal(s.schema) {
		rdr.Release()
		return nil, &input.ParseError{Path: s.f.Path, Offset: -1, Err: fmt.Errorf("%w: %s: the footer's schema decodes as %s, then as %s", input.ErrFormat, where, s.schema, rdr.Schema())}
	}
	return &fileBatches{s: s, rdr: rdr, where: where}, nil
}

// fileBatches decodes the record batches of an IPC file whose bytes are
// loaded.
type fileBatches struct {
	s     *ipcFile
	rdr   *ipc.Reader
	where string
}

func (u *fileBatches) next() (arrow.RecordBatch, error) {
	u.s.f.Stats.Groups.Add(1)
	if !u.rdr.Next() {
		u.s.f.Stats.Groups.Add(-1)
		if err := u.rdr.Err(); err != nil {
			return nil, u.s.f.unitError(err, u.where)
		}
		return nil, io.EOF
	}
	rec := u.rdr.RecordBatch()
	rec.Retain()
	return rec, nil
}

func (u *fileBatches) close() {
	if u.rdr != nil {
		u.rdr.Release()
		u.rdr = nil
	}
}

// blockMessages hands arrow-go's stream reader a Schema message (head),
// then the messages of an IPC file's blocks, in list's order, as buffers
// over the loaded bytes: the arrays of a record batch are the loaded
// bytes, not a copy of them. Blocks from batches on are record batches,
// which must lie at multiples of 8 bytes, as arrow-go's file reader
// requires.
type blockMessages struct {
	ld      *loaded
	head    []byte // sent first, then nil
	list    []ipcBlock
	batches int
	at      int
	msg     *ipc.Message
	refs    atomic.Int64
}

var _ ipc.MessageReader = (*blockMessages)(nil)

var (
	_ ranged = (*ipcFile)(nil)
	_ ranged = (*parquetFile)(nil)
)

func (m *blockMessages) Message() (*ipc.Message, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	if m.head != nil {
		m.msg = ipc.NewMessage(memory.NewBufferBytes(m.head), memory.NewBufferBytes(nil))
		m.head = nil
		return m.msg, nil
	}
	if m.at == len(m.list) {
		return nil, io.EOF
	}
	b := m.list[m.at]
	if m.at >= m.batches && (b.off%8 != 0 || b.meta%8 != 0 || b.body%8 != 0) {
		return nil, fmt.Errorf("record batch at byte %d (%d+%d bytes) is not aligned to 8 bytes", b.off, b.meta, b.body)
	}
	m.at++
	raw := m.ld.bytes(b.off, b.meta+b.body)
	if raw == nil {
		return nil, errOutside
	}
	meta, err := messageMeta(raw[:b.meta])
	if err != nil {
		return nil, err
	}
	m.msg = ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(raw[b.meta:]))
	return m.msg, nil
}

func (m *blockMessages) Retain() { m.refs.Add(1) }

func (m *blockMessages) Release() {
	if m.refs.Add(-1) == 0 && m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// ipcStream is an opened Arrow IPC stream.
type ipcStream struct {
	f      *File
	schema *arrow.Schema
}

func (s *ipcStream) unitName() string { return "record batch" }

// messages reads the messages of an IPC stream, checking each before the
// decoder sees it, and passes over the first skip record batches without
// decoding them. It notes the CRC-32C of the bytes from the end of the
// previous record batch message to the end of the last one it returned.
type messages struct {
	r         io.Reader
	mem       memory.Allocator
	span      uint32 // CRC of the bytes read since the last cut or skipped record batch
	spanBytes int64  // and their number
	skip      int64
	seen      int64 // record batches read, skipped ones included
	msg       *ipc.Message
	refs      atomic.Int64
	hdr       [8]byte
}

// cut returns the CRC-32C of the bytes read since the last cut (or since
// the last record batch passed over) and starts the next span.
func (m *messages) cut() uint32 {
	crc := m.span
	m.span, m.spanBytes = 0, 0
	return crc
}

var _ ipc.MessageReader = (*messages)(nil)

// Bounds on one message, as arrow-go's own message reader has them.
const (
	maxMessageMeta = 64 << 20
	maxMessageBody = 1 << 30
)

func (m *messages) read(p []byte) error {
	n, err := io.ReadFull(m.r, p)
	m.span = crc32.Update(m.span, partition.Castagnoli, p[:n])
	m.spanBytes += int64(n)
	return err
}

func (m *messages) Message() (*ipc.Message, error) {
	for {
		msg, kind, err := m.next()
		if err != nil {
			return nil, err
		}
		if kind != fbHeaderRecords {
			return msg, nil
		}
		m.seen++
		if m.seen > m.skip {
			return msg, nil
		}
		m.cut() // a partition starts after the record batches passed over
	}
}

func (m *messages) next() (*ipc.Message, byte, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	if err := m.read(m.hdr[:4]); err != nil {
		if err == io.EOF {
			return nil, 0, io.EOF // a stream may end without its end marker
		}
		return nil, 0, fmt.Errorf("read message: %w", err)
	}
	n := binary.LittleEndian.Uint32(m.hdr[:4])
	if n == ipcContinuation {
		if err := m.read(m.hdr[4:8]); err != nil {
			return nil, 0, fmt.Errorf("read message length: %w", unexpected(err))
		}
		n = binary.LittleEndian.Uint32(m.hdr[4:8])
	}
	if n == 0 {
		return nil, 0, io.EOF // the end-of-stream marker
	}
	if n < 8 || n > maxMessageMeta {
		return nil, 0, fmt.Errorf("%w: message metadata of %d bytes", errFlatbuffer, int32(n))
	}
	meta, err := m.readGrowing(nil, int64(n))
	if err != nil {
		return nil, 0, fmt.Errorf("read message metadata: %w", unexpected(err))
	}
	if err := checkMessage(meta); err != nil {
		return nil, 0, err
	}
	size, err := bodyLength(meta)
	if err != nil {
		return nil, 0, err
	}
	if size < 0 || size > maxMessageBody {
		return nil, 0, fmt.Errorf("%w: message body of %d bytes", errFlatbuffer, size)
	}
	body := memory.NewResizableBuffer(m.mem)
	defer body.Release()
	if _, err := m.readGrowing(body, size); err != nil {
		return nil, 0, fmt.Errorf("read message body: %w", unexpected(err))
	}
	if err := checkBody(meta, body.Bytes()); err != nil {
		return nil, 0, err
	}
	kind, _ := (&fbCheck{buf: meta}).kind()
	m.msg = ipc.NewMessage(memory.NewBufferBytes(meta), body)
	return m.msg, kind, nil
}

// readGrowing reads n bytes of the stream into buf (a new byte slice when
// buf is nil, which it returns), growing it as the bytes arrive rather
// than by what the message declares: a stream of a few bytes that
// declares a gigabyte costs a few bytes.
func (m *messages) readGrowing(buf *memory.Buffer, n int64) ([]byte, error) {
	var out []byte
	for have := int64(0); have < n; {
		step := min(n-have, max(have, 64<<10))
		if buf != nil {
			buf.Resize(int(have + step))
			out = buf.Bytes()
		} else {
			out = slices.Grow(out, int(step))[:have+step]
		}
		if err := m.read(out[have : have+step]); err != nil {
			if have > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		have += step
	}
	if out == nil && buf == nil {
		out = []byte{}
	}
	return out, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (m *messages) Retain() { m.refs.Add(1) }

func (m *messages) Release() {
	if m.refs.Add(-1) == 0 && m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// stream opens the decompressed stream and an ipc.Reader over it that
// passes over the first skip record batches.
func (s *ipcStream) stream(skip int64) (*ipc.Reader, *messages, io.Closer, error) {
	st, err := s.f.Open(context.Background(), 0)
	if err != nil {
		return nil, nil, nil, err
	}
	m := &messages{r: st, mem: s.f.Opts.Allocator, skip: skip}
	m.refs.Add(1)
	rdr, err := ipc.NewReaderFromMessageReader(m, ipc.WithAllocator(s.f.Opts.Allocator))
	if err != nil {
		st.Close()
		return nil, nil, nil, s.f.unitError(err, "schema")
	}
	if s.schema != nil && !rdr.Schema().Equal(s.schema) {
		rdr.Release()
		st.Close()
		return nil, nil, nil, &input.ParseError{Path: s.f.Path, Offset: 0, Err: fmt.Errorf("%w: the stream's schema differs", input.ErrSourceChanged)}
	}
	return rdr, m, st, nil
}

// openIPCStream reads an Arrow IPC stream's schema.
func (f *File) openIPCStream() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = f.recovered(v, "schema")
		}
	}()
	if f.In.Size() == 0 {
		return &input.ParseError{Path: f.Path, Offset: 0, Err: input.ErrEmpty}
	}
	s := &ipcStream{f: f}
	rdr, _, c, err := s.stream(0)
	if err != nil {
		return err
	}
	s.schema = rdr.Schema()
	rdr.Release()
	c.Close()
	if f.cols, f.schema, err = f.arrowColumns(s.schema, nil); err != nil {
		return err
	}
	f.units = s
	return nil
}

// scan reads the stream's record batches in order, holding those of a
// partition until it ends (see the top of this file).
func (s *ipcStream) scan(ctx context.Context, o partition.ScanOptions, fn func(p idemtype.Partition, u unit) error) error {
	rdr, msgs, c, err := s.stream(0)
	if err != nil {
		return err
	}
	defer c.Close()
	defer rdr.Release()
	part := &batchList{}
	defer part.close()
	var p idemtype.Partition
	var k int64
	flush := func() error {
		msgs.cut()
		u := part
		part = &batchList{}
		defer u.close()
		return fn(p, u)
	}
	for ; ; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !rdr.Next() {
			break
		}
		s.f.Stats.Groups.Add(1)
		rec := rdr.RecordBatch()
		rec.Retain()
		if len(part.recs) == 0 {
			p = idemtype.Partition{Offset: k, Length: 1}
		}
		part.recs = append(part.recs, rec)
		p.Rows += rec.NumRows()
		p.CRC = msgs.span // to the end of this record batch: what follows the last is not the partition's
		if p.Rows >= o.PartitionRows || msgs.spanBytes >= o.PartitionBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rdr.Err(); err != nil {
		return s.f.unitError(err, fmt.Sprintf("record batch %d", k))
	}
	if len(part.recs) > 0 {
		return flush()
	}
	return nil
}

func (s *ipcStream) open(p idemtype.Partition, _ int) (unit, error) {
	if p.Offset < 0 || p.Length < 1 {
		return nil, &input.ParseError{Path: s.f.Path, Offset: -1,
			Err: fmt.Errorf("%w: the plan's partition %d is record batch %d (+%d)", input.ErrSourceChanged, p.Index, p.Offset, p.Length)}
	}
	rdr, msgs, c, err := s.stream(p.Offset)
	if err != nil {
		return nil, err
	}
	u := &streamUnit{s: s, rdr: rdr, msgs: msgs, c: c}
	u.start(p)
	return u, nil
}

// streamUnit reads the record batches of a stream partition, from a stream
// positioned at its first; read to the end, it is positioned at the next
// partition's (File.keep).
type streamUnit struct {
	s    *ipcStream
	rdr  *ipc.Reader
	msgs *messages
	c    io.Closer
	p    idemtype.Partition
	left int64 // rows of p, those before the table included, not read yet
}

// start readies u to read partition p, which starts where the stream is.
func (u *streamUnit) start(p idemtype.Partition) {
	u.p, u.left = p, p.Rows+skipped(p)
}

// next returns the partition's next record batch, and io.EOF after its
// last, whose bytes it checks against the plan's CRC before returning it.
func (u *streamUnit) next() (arrow.RecordBatch, error) {
	if u.left <= 0 {
		return nil, io.EOF
	}
	where := u.s.f.where("record batch", u.p)
	if !u.rdr.Next() {
		if err := u.rdr.Err(); err != nil {
			return nil, u.s.f.unitError(err, where)
		}
		return nil, &input.ParseError{Path: u.s.f.Path, Offset: -1, Err: fmt.Errorf("%w: the stream ends before the end of %s", input.ErrSourceChanged, where)}
	}
	u.s.f.Stats.Groups.Add(1)
	rec := u.rdr.RecordBatch()
	if n := rec.NumRows(); n > u.left {
		return nil, &input.ParseError{Path: u.s.f.Path, Offset: -1,
			Err: fmt.Errorf("%w: %s: record batch %d has %d rows, more than the %d the plan has left", input.ErrSourceChanged, where, u.msgs.seen-1, n, u.left)}
	}
	u.left -= rec.NumRows()
	if u.left == 0 && u.msgs.cut() != u.p.CRC {
		return nil, &input.ParseError{Path: u.s.f.Path, Offset: -1, Err: fmt.Errorf("%w: %s's bytes differ from the plan", input.ErrSourceChanged, where)}
	}
	rec.Retain()
	return rec, nil
}

// following returns the partition that starts where u stands, as far as
// its reader can tell: Offset and Length.
func (u *streamUnit) following() idemtype.Partition {
	return idemtype.Partition{Offset: u.msgs.seen, Length: 1}
}

func (u *streamUnit) close() {
	if u.rdr != nil {
		u.rdr.Release()
		u.c.Close()
		u.rdr = nil
	}
}

// batchList is a unit of decoded record batches.
type batchList struct{ recs []arrow.RecordBatch }

func (u *batchList) next() (arrow.RecordBatch, error) {
	if len(u.recs) == 0 {
		return nil, io.EOF
	}
	rec := u.recs[0]
	u.recs = u.recs[1:]
	return rec, nil
}

func (u *batchList) close() {
	for _, r := range u.recs {
		r.Release()
	}
	u.recs = nil
}
