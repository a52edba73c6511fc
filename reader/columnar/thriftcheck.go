package columnar

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// arrow-go decodes a Parquet footer with Thrift's generated code, which
// allocates every list from the element count the list declares (up to
// 100 million, whatever bytes follow), and allocates a Go struct for every
// struct the bytes hold, however small: an empty struct is one byte on the
// wire and a couple of hundred in memory. A footer of a few bytes could so
// cost gigabytes, and one of some megabytes of empty row groups hundreds.
// thriftCheck walks the footer first, in Thrift's compact protocol, with
// bounds checks: every count must fit in the bytes that remain, nesting is
// bounded, and what decoding would allocate is estimated, generously, and
// bounded too. It checks structure and sizes only; the decoder still
// checks meaning.

// Limits on a Parquet footer.
const (
	// maxFooterBytes bounds the footer's declared length, checked before
	// it is read. A footer of 1,000 columns in 100 row groups is about
	// 15 MB.
	maxFooterBytes = 64 << 20
	// maxFooterMemory bounds what decoding the footer may allocate, by
	// thriftCheck's estimate, which is high: about 130,000 column chunks
	// with statistics (arrow-go takes about 130 MiB to decode them).
	maxFooterMemory = 192 << 20
	maxThriftDepth  = 64
)

// What thriftCheck counts for each value decoded: a struct (the largest of
// parquet.thrift's is about 230 bytes as a Go struct), a field (a scalar
// field is a pointer to its own small allocation when optional), a list
// (its slice header) and each list element (a pointer or an 8-byte value),
// and a string or binary (its header, then its bytes). A schema element
// also becomes a node of arrow-go's schema tree.
const (
	costStruct        = 256
	costField         = 16
	costList          = 24
	costElem          = 16
	costString        = 16
	costSchemaElement = 512
)

var errThrift = errors.New("corrupt Thrift")

// Compact protocol types.
const (
	tcStop = iota
	tcTrue
	tcFalse
	tcByte
	tcI16
	tcI32
	tcI64
	tcDouble
	tcBinary
	tcList
	tcSet
	tcMap
	tcStruct
	tcUUID
)

type thriftCheck struct {
	buf  []byte
	pos  int
	cost int64
}

// checkFooter walks a Parquet footer (a FileMetaData struct) and returns
// an error wrapping errThrift when it is malformed or would take more than
// maxFooterMemory to decode.
func checkFooter(footer []byte) error {
	c := &thriftCheck{buf: footer}
	return c.structure(0, true)
}

func (c *thriftCheck) spend(n int64) error {
	c.cost += n
	if c.cost > maxFooterMemory {
		return fmt.Errorf("%w: the footer of %d bytes would take more than %d MiB of memory to decode", errThrift, len(c.buf), maxFooterMemory>>20)
	}
	return nil
}

func (c *thriftCheck) byte1() (byte, error) {
	if c.pos >= len(c.buf) {
		return 0, fmt.Errorf("%w: ends inside a value at byte %d", errThrift, c.pos)
	}
	b := c.buf[c.pos]
	c.pos++
	return b, nil
}

func (c *thriftCheck) skip(n int64) error {
	if n < 0 || n > int64(len(c.buf)-c.pos) {
		return fmt.Errorf("%w: %d bytes at byte %d, beyond its end", errThrift, n, c.pos)
	}
	c.pos += int(n)
	return nil
}

func (c *thriftCheck) varint() (uint64, error) {
	v, n := binary.Uvarint(c.buf[c.pos:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint at byte %d", errThrift, c.pos)
	}
	c.pos += n
	return v, nil
}

// count reads a container's element count and checks that its elements,
// of at least min bytes each, fit in what remains.
func (c *thriftCheck) count(n uint64, min int64) (int64, error) {
	if n > uint64(len(c.buf)-c.pos)/uint64(min) {
		return 0, fmt.Errorf("%w: %d elements at byte %d in %d bytes", errThrift, n, c.pos, len(c.buf)-c.pos)
	}
	return int64(n), nil
}

// minSize is the fewest bytes a value of type t takes.
func minSize(t byte) int64 {
	switch t {
	case tcDouble:
		return 8
	case tcUUID:
		return 16
	}
	return 1
}

// structure walks a struct's fields up to its stop. At the top level
// (the FileMetaData), field 2 is the schema.
func (c *thriftCheck) structure(depth int, top bool) error {
	if err := c.spend(costStruct); err != nil {
		return err
	}
	return c.fields(depth, func(id int64, t byte) (bool, error) {
		if err := c.spend(costField); err != nil {
			return false, err
		}
		each := int64(0)
		if top && id == 2 {
			each = costSchemaElement
		}
		return true, c.value(t, depth+1, each)
	})
}

// value walks one value of type t; each is spent for every element of a
// list or set.
func (c *thriftCheck) value(t byte, depth int, each int64) error {
	switch t {
	case tcTrue, tcFalse:
		return nil
	case tcByte:
		return c.skip(1)
	case tcI16, tcI32, tcI64:
		_, err := c.varint()
		return err
	case tcDouble:
		return c.skip(8)
	case tcUUID:
		return c.skip(16)
	case tcBinary:
		n, err := c.varint()
		if err != nil {
			return err
		}
		if n > uint64(len(c.buf)-c.pos) {
			return fmt.Errorf("%w: %d bytes at byte %d, beyond its end", errThrift, n, c.pos)
		}
		if err := c.spend(costString + int64(n)); err != nil {
			return err
		}
		return c.skip(int64(n))
	case tcStruct:
		return c.structure(depth, false)
	case tcList, tcSet:
		h, err := c.byte1()
		if err != nil {
			return err
		}
		et, n := h&0x0f, uint64(h>>4)
		if n == 15 {
			if n, err = c.varint(); err != nil {
				return err
			}
		}
		if !validType(et) {
			return fmt.Errorf("%w: list of type %d at byte %d", errThrift, et, c.pos)
		}
		count, err := c.count(n, minSize(et))
		if err != nil {
			return err
		}
		if err := c.spend(costList + count*(costElem+each)); err != nil {
			return err
		}
		for range count {
			if et == tcTrue || et == tcFalse { // a list's booleans are a byte each
				if err := c.skip(1); err != nil {
					return err
				}
				continue
			}
			if err := c.value(et, depth+1, 0); err != nil {
				return err
			}
		}
		return nil
	case tcMap:
		n, err := c.varint()
		if err != nil || n == 0 {
			return err
		}
		h, err := c.byte1()
		if err != nil {
			return err
		}
		kt, vt := h>>4, h&0x0f
		if !validType(kt) || !validType(vt) {
			return fmt.Errorf("%w: map of types %d and %d at byte %d", errThrift, kt, vt, c.pos)
		}
		count, err := c.count(n, minSize(kt)+minSize(vt))
		if err != nil {
			return err
		}
		if err := c.spend(costList + 2*count*costElem); err != nil {
			return err
		}
		for range count {
			for _, t := range []byte{kt, vt} {
				if t == tcTrue || t == tcFalse {
					if err := c.skip(1); err != nil {
						return err
					}
				} else if err := c.value(t, depth+1, 0); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%w: type %d at byte %d", errThrift, t, c.pos)
}

func validType(t byte) bool { return t >= tcTrue && t <= tcUUID }
