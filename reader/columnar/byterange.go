package columnar

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
)

// span64 is a byte range of a file.
type span64 struct{ off, len int64 }

// loaded is a file's bytes in a few byte ranges, read into memory and
// checksummed before any decoder sees them. It serves a decoder's ReadAt
// calls from memory, so what is decoded is exactly what was verified, and a
// read outside the ranges fails instead of touching the disk: a decoder
// cannot wander into bytes the checksum does not cover.
type loaded struct {
	size   int64 // the file's size, what Seek(0, io.SeekEnd) reports
	ranges []loadedRange
	pos    int64
}

type loadedRange struct {
	off  int64
	data []byte
}

// errOutside means a decoder asked for bytes the metadata did not announce.
var errOutside = errors.New("read outside the byte ranges the metadata declares")

// load reads the given ranges of f's source, in order, into memory. It returns the
// CRC-32C of their bytes in that order, continuing from crc. Ranges must lie
// inside size; a short read means the file changed.
func (l *loaded) load(f *File, where string, spans []span64, crc uint32) (uint32, error) {
	for _, s := range spans {
		if s.off < 0 || s.len < 0 || s.off > l.size || s.len > l.size-s.off {
			return 0, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %s: byte range %d+%d is outside the file (%d bytes)", input.ErrFormat, where, s.off, s.len, l.size)}
		}
		buf := make([]byte, s.len)
		n, err := f.In.ReadAt(buf, s.off)
		f.Stats.Bytes.Add(int64(n))
		if n < len(buf) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, &input.ParseError{Path: f.Path, Offset: s.off + int64(n), Err: fmt.Errorf("%w: %s: the file ends early (%v)", input.ErrSourceChanged, where, err)}
		}
		crc = crc32.Update(crc, partition.Castagnoli, buf)
		l.ranges = append(l.ranges, loadedRange{off: s.off, data: buf})
	}
	sort.SliceStable(l.ranges, func(i, j int) bool { return l.ranges[i].off < l.ranges[j].off })
	return crc, nil
}

// reset forgets every range but base.
func (l *loaded) reset(base []loadedRange) {
	l.ranges = append(l.ranges[:0], base...)
}

// bytes returns the loaded bytes off..off+n, or nil when they are not
// loaded.
func (l *loaded) bytes(off, n int64) []byte {
	for _, r := range l.ranges {
		if off >= r.off && n >= 0 && off+n <= r.off+int64(len(r.data)) {
			return r.data[off-r.off : off-r.off+n]
		}
	}
	return nil
}

func (l *loaded) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	for _, r := range l.ranges {
		if off >= r.off && end <= r.off+int64(len(r.data)) {
			return copy(p, r.data[off-r.off:]), nil
		}
	}
	// A read that starts inside a range and runs past its end gets what
	// there is, as io.ReaderAt allows at the end of data.
	for _, r := range l.ranges {
		if off >= r.off && off < r.off+int64(len(r.data)) {
			return copy(p, r.data[off-r.off:]), io.EOF
		}
	}
	return 0, errOutside
}

func (l *loaded) Read(p []byte) (int, error) {
	n, err := l.ReadAt(p, l.pos)
	l.pos += int64(n)
	return n, err
}

func (l *loaded) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += l.pos
	case io.SeekEnd:
		offset += l.size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek to %d", offset)
	}
	l.pos = offset
	return offset, nil
}
