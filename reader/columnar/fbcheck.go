package columnar

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// arrow-go's IPC decoder trusts the vector lengths of the flatbuffers that
// describe schemas and record batches: it allocates from them before
// reading, and follows child fields recursively. Hostile lengths make it
// allocate terabytes, and cyclic children recurse without end; both kill
// the process, which recover cannot prevent. fbCheck walks those
// flatbuffers first, with bounds checks, so that such bytes become a
// *ParseError instead. It checks structure and sizes only; the decoder
// still checks meaning.

// Limits on what a legitimate schema needs.
const (
	maxFieldDepth = 64 // nesting of child fields
)

var errFlatbuffer = errors.New("corrupt flatbuffer")

type fbCheck struct {
	buf    []byte
	fields int // fields visited, to bound a schema whose children are shared
}

// fbTable is a flatbuffer table located in a checked buffer.
type fbTable struct {
	c      *fbCheck
	pos    int
	vt     int
	vtsize int
}

func (c *fbCheck) u32(at int) (int, error) {
	if at < 0 || at > len(c.buf)-4 {
		return 0, fmt.Errorf("%w: offset %d is outside %d bytes", errFlatbuffer, at, len(c.buf))
	}
	return int(binary.LittleEndian.Uint32(c.buf[at:])), nil
}

// table returns the table that starts at pos.
func (c *fbCheck) table(pos int) (fbTable, error) {
	soff, err := c.u32(pos)
	if err != nil {
		return fbTable{}, err
	}
	vt := pos - int(int32(uint32(soff)))
	if vt < 0 || vt > len(c.buf)-4 {
		return fbTable{}, fmt.Errorf("%w: vtable at %d is outside %d bytes", errFlatbuffer, vt, len(c.buf))
	}
	vtsize := int(binary.LittleEndian.Uint16(c.buf[vt:]))
	if vtsize < 4 || vtsize%2 != 0 || vt+vtsize > len(c.buf) {
		return fbTable{}, fmt.Errorf("%w: vtable of %d bytes at %d", errFlatbuffer, vtsize, vt)
	}
	return fbTable{c: c, pos: pos, vt: vt, vtsize: vtsize}, nil
}

// root returns the buffer's root table.
func (c *fbCheck) root() (fbTable, error) {
	at, err := c.u32(0)
	if err != nil {
		return fbTable{}, err
	}
	return c.table(at)
}

// field returns the position of field i, or false when it is absent.
func (t fbTable) field(i int) (int, bool) {
	at := 4 + 2*i
	if at+2 > t.vtsize {
		return 0, false
	}
	o := int(binary.LittleEndian.Uint16(t.c.buf[t.vt+at:]))
	if o == 0 {
		return 0, false
	}
	return t.pos + o, true
}

// ref follows the offset stored in field i.
func (t fbTable) ref(i int) (int, bool, error) {
	at, ok := t.field(i)
	if !ok {
		return 0, false, nil
	}
	rel, err := t.c.u32(at)
	if err != nil {
		return 0, false, err
	}
	target := at + rel
	if target < 0 || target > len(t.c.buf)-4 {
		return 0, false, fmt.Errorf("%w: reference to %d is outside %d bytes", errFlatbuffer, target, len(t.c.buf))
	}
	return target, true, nil
}

// sub returns the table field i refers to.
func (t fbTable) sub(i int) (fbTable, bool, error) {
	at, ok, err := t.ref(i)
	if err != nil || !ok {
		return fbTable{}, false, err
	}
	s, err := t.c.table(at)
	return s, err == nil, err
}

// vector returns the start and length of the vector in field i, whose
// elements are size bytes each, after checking that it fits.
func (t fbTable) vector(i, size int) (int, int, error) {
	at, ok, err := t.ref(i)
	if err != nil || !ok {
		return 0, 0, err
	}
	n, err := t.c.u32(at)
	if err != nil {
		return 0, 0, err
	}
	if n > (len(t.c.buf)-at-4)/size {
		return 0, 0, fmt.Errorf("%w: a vector of %d elements does not fit in %d bytes", errFlatbuffer, n, len(t.c.buf))
	}
	return at + 4, n, nil
}

// tables checks a vector of tables in field i, calling each on each.
func (t fbTable) tables(i int, each func(fbTable) error) error {
	start, n, err := t.vector(i, 4)
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		rel, err := t.c.u32(start + 4*k)
		if err != nil {
			return err
		}
		s, err := t.c.table(start + 4*k + rel)
		if err != nil {
			return err
		}
		if each != nil {
			if err := each(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// i64 returns the long scalar in field i, or 0 when absent.
func (t fbTable) i64(i int) (int64, error) {
	at, ok := t.field(i)
	if !ok {
		return 0, nil
	}
	if at < 0 || at > len(t.c.buf)-8 {
		return 0, fmt.Errorf("%w: field at %d is outside %d bytes", errFlatbuffer, at, len(t.c.buf))
	}
	return int64(binary.LittleEndian.Uint64(t.c.buf[at:])), nil
}

// u8 returns the byte scalar in field i, or 0 when absent.
func (t fbTable) u8(i int) (byte, error) {
	at, ok := t.field(i)
	if !ok {
		return 0, nil
	}
	if at < 0 || at >= len(t.c.buf) {
		return 0, fmt.Errorf("%w: field at %d is outside %d bytes", errFlatbuffer, at, len(t.c.buf))
	}
	return t.c.buf[at], nil
}

// keyValues checks a [KeyValue{key: string, value: string}] in field i.
func (t fbTable) keyValues(i int) error {
	return t.tables(i, func(kv fbTable) error {
		if _, _, err := kv.vector(0, 1); err != nil {
			return err
		}
		_, _, err := kv.vector(1, 1)
		return err
	})
}

// checkSchema checks a Schema{endianness, fields: [Field], custom_metadata,
// features} table.
func (c *fbCheck) checkSchema(s fbTable) error {
	if err := s.tables(1, func(f fbTable) error { return c.checkField(f, 1) }); err != nil {
		return err
	}
	if err := s.keyValues(2); err != nil {
		return err
	}
	_, _, err := s.vector(3, 8)
	return err
}

// checkField checks a Field{name, nullable, type_type, type, dictionary,
// children: [Field], custom_metadata} table and its children.
func (c *fbCheck) checkField(f fbTable, depth int) error {
	c.fields++
	if depth > maxFieldDepth {
		return fmt.Errorf("%w: fields nested more than %d deep", errFlatbuffer, maxFieldDepth)
	}
	if c.fields > len(c.buf)/8+16 {
		return fmt.Errorf("%w: more fields than %d bytes can describe", errFlatbuffer, len(c.buf))
	}
	if _, _, err := f.vector(0, 1); err != nil {
		return err
	}
	if _, _, err := f.sub(3); err != nil {
		return err
	}
	if d, ok, err := f.sub(4); err != nil {
		return err
	} else if ok {
		if _, _, err := d.sub(1); err != nil {
			return err
		}
	}
	if err := f.tables(5, func(ch fbTable) error { return c.checkField(ch, depth+1) }); err != nil {
		return err
	}
	return f.keyValues(6)
}

// checkRecordBatch checks a RecordBatch{length, nodes: [FieldNode],
// buffers: [Buffer], compression, variadicBufferCounts: [long]} table.
func (c *fbCheck) checkRecordBatch(rb fbTable) error {
	if n, err := rb.i64(0); err != nil {
		return err
	} else if n < 0 {
		return fmt.Errorf("%w: record batch of %d rows", errFlatbuffer, n)
	}
	if _, _, err := rb.vector(1, 16); err != nil {
		return err
	}
	_, nbuf, err := rb.vector(2, 16)
	if err != nil {
		return err
	}
	if _, _, err := rb.sub(3); err != nil {
		return err
	}
	start, n, err := rb.vector(4, 8)
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		v := int64(binary.LittleEndian.Uint64(c.buf[start+8*k:]))
		if v < 0 || v > int64(nbuf) {
			return fmt.Errorf("%w: %d variadic buffers, the batch has %d", errFlatbuffer, v, nbuf)
		}
	}
	return nil
}

// IPC message header types (Message.fbs).
const (
	fbHeaderSchema     = 1
	fbHeaderDictionary = 2
	fbHeaderRecords    = 3
)

// checkMessage checks the flatbuffer of an IPC message: Message{version,
// header_type, header, bodyLength, custom_metadata}.
func checkMessage(meta []byte) error {
	c := &fbCheck{buf: meta}
	m, err := c.root()
	if err != nil {
		return err
	}
	if err := m.keyValues(4); err != nil {
		return err
	}
	kind, err := m.u8(1)
	if err != nil {
		return err
	}
	h, ok, err := m.sub(2)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: message without a header", errFlatbuffer)
	}
	switch kind {
	case fbHeaderSchema:
		return c.checkSchema(h)
	case fbHeaderDictionary:
		rb, ok, err := h.sub(1)
		if err != nil || !ok {
			return err
		}
		return c.checkRecordBatch(rb)
	case fbHeaderRecords:
		return c.checkRecordBatch(h)
	}
	return fmt.Errorf("%w: unsupported message type %d", errFlatbuffer, kind)
}

// checkFooterSchema checks the schema of an IPC file footer:
// Footer{version, schema, dictionaries, recordBatches, custom_metadata}.
func checkFooterSchema(footer []byte) error {
	c := &fbCheck{buf: footer}
	f, err := c.root()
	if err != nil {
		return err
	}
	if err := f.keyValues(4); err != nil {
		return err
	}
	s, ok, err := f.sub(1)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: footer without a schema", errFlatbuffer)
	}
	return c.checkSchema(s)
}

// ipcContinuation marks the start of an IPC message since format 0.15.
const ipcContinuation = 0xFFFFFFFF

// messageMeta returns the flatbuffer of an encapsulated IPC message: an
// optional continuation marker, a length, and the flatbuffer.
func messageMeta(b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: message of %d bytes", errFlatbuffer, len(b))
	}
	if binary.LittleEndian.Uint32(b) == ipcContinuation {
		b = b[4:]
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: message cut after its marker", errFlatbuffer)
		}
	}
	n := int(int32(binary.LittleEndian.Uint32(b)))
	if n < 0 || n > len(b)-4 {
		return nil, fmt.Errorf("%w: message metadata of %d bytes in %d", errFlatbuffer, n, len(b)-4)
	}
	return b[4 : 4+n], nil
}

// maxUncompressedBuffer bounds the size a compressed IPC buffer may claim
// to decompress to; arrow-go allocates it before decompressing.
const maxUncompressedBuffer = 1 << 30

// bodyLength returns the bodyLength of a checked message flatbuffer.
func bodyLength(meta []byte) (int64, error) {
	c := &fbCheck{buf: meta}
	m, err := c.root()
	if err != nil {
		return 0, err
	}
	return m.i64(3)
}

// checkBody checks the buffers of a record batch or dictionary message
// against its body: each must lie inside it, and a compressed buffer must
// not claim to decompress to more than maxUncompressedBuffer bytes.
func checkBody(meta, body []byte) error {
	c := &fbCheck{buf: meta}
	m, err := c.root()
	if err != nil {
		return err
	}
	kind, err := m.u8(1)
	if err != nil {
		return err
	}
	h, ok, err := m.sub(2)
	if err != nil || !ok {
		return err
	}
	switch kind {
	case fbHeaderDictionary:
		if h, ok, err = h.sub(1); err != nil || !ok {
			return err
		}
	case fbHeaderRecords:
	default:
		return nil
	}
	_, compressed, err := h.sub(3)
	if err != nil {
		return err
	}
	start, n, err := h.vector(2, 16)
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		off := int64(binary.LittleEndian.Uint64(meta[start+16*k:]))
		size := int64(binary.LittleEndian.Uint64(meta[start+16*k+8:]))
		if off < 0 || size < 0 || off > int64(len(body)) || size > int64(len(body))-off {
			return fmt.Errorf("%w: buffer %d at %d+%d is outside a body of %d bytes", errFlatbuffer, k, off, size, len(body))
		}
		if compressed && size > 0 {
			if size < 8 {
				return fmt.Errorf("%w: compressed buffer %d of %d bytes", errFlatbuffer, k, size)
			}
			u := int64(binary.LittleEndian.Uint64(body[off:]))
			if u != -1 && (u < 0 || u > maxUncompressedBuffer) {
				return fmt.Errorf("%w: compressed buffer %d claims %d bytes", errFlatbuffer, k, u)
			}
		}
	}
	return nil
}

// checkEncapsulated checks a whole encapsulated IPC message, metadata and
// body, held in b (as Parquet stores its Arrow schema).
func checkEncapsulated(b []byte) error {
	meta, err := messageMeta(b)
	if err != nil {
		return err
	}
	if err := checkMessage(meta); err != nil {
		return err
	}
	n, err := bodyLength(meta)
	if err != nil {
		return err
	}
	rest := len(b) - len(meta) - 4
	if binary.LittleEndian.Uint32(b) == ipcContinuation {
		rest -= 4
	}
	if n < 0 || n > int64(rest) {
		return fmt.Errorf("%w: message body of %d bytes in %d", errFlatbuffer, n, rest)
	}
	return nil
}

// kind returns the header type of a checked message flatbuffer.
func (c *fbCheck) kind() (byte, error) {
	m, err := c.root()
	if err != nil {
		return 0, err
	}
	return m.u8(1)
}
