package columnar

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"sync"

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
//
// The ranges are read into one buffer, each range a piece of it that
// cannot grow into the next, advised into huge pages (adviseHuge): a row
// group's column chunks or a record batch are tens of megabytes of fresh
// memory, and faulting them in 4 KiB at a time cost more than reading them.
func (l *loaded) load(f *File, where string, spans []span64, crc uint32) (uint32, error) {
	var total int64
	for _, s := range spans {
		if s.off < 0 || s.len < 0 || s.off > l.size || s.len > l.size-s.off {
			return 0, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: %s: byte range %d+%d is outside the file (%d bytes)", input.ErrFormat, where, s.off, s.len, l.size)}
		}
		total += s.len
	}
	all := make([]byte, total)
	adviseHuge(all)
	for _, s := range spans {
		buf := all[:s.len:s.len]
		all = all[s.len:]
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
// loaded. The slice's capacity ends with it, so a reader that runs past
// its end fails instead of reading the next range's bytes.
func (l *loaded) bytes(off, n int64) []byte {
	for _, r := range l.ranges {
		if off >= r.off && n >= 0 && off+n <= r.off+int64(len(r.data)) {
			return r.data[off-r.off : off-r.off+n : off-r.off+n]
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

// planned is what the plan pass leaves for the partition reader of the
// partition it read last: the bytes it loaded and checksummed for that
// partition (a Parquet row group, an IPC file's run of record batches),
// whose CRC-32C the plan records. A reader whose partition starts at the
// same unit with the same CRC takes them (take) instead of reading and
// checksumming them again: they are the bytes the plan's CRC was computed
// over, so what is decoded is still what the plan checked. The plan pass
// leaves only its last partition's bytes, which it held anyway when it
// ended, so the pass holds no more memory than before; the first reader
// to take them drops them, and File.Close drops them unread. Partitions
// read in order start with the plan's first: a file of one row group or
// one record batch, or one partition, is then read from disk once.
type planned struct {
	mu     sync.Mutex
	unit   int64  // the partition's first unit: its row group, or record batch
	units  int    // how many units the bytes hold (IPC: the run's record batches)
	crc    uint32 // the CRC the plan pass computed over them, as Partition.CRC
	ranges []loadedRange
	// An IPC file's dictionaries (and footer), which ranges also hold,
	// and their CRC-32C.
	dicts   []loadedRange
	dictCRC uint32
	// A Parquet row group's dictionaries, by column index, as the plan
	// pass's pageChunks read them from ranges (see chunkDict).
	chunkDicts map[int]*chunkDict
}

// leave keeps p, a partition's bytes, for the partition reader that takes
// them.
func (l *planned) leave(p *planned) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unit, l.units, l.crc, l.ranges, l.dicts, l.dictCRC, l.chunkDicts = p.unit, p.units, p.crc, p.ranges, p.dicts, p.dictCRC, p.chunkDicts
}

// take returns the bytes left for the partition of units units from unit
// whose CRC is crc, and forgets them; nil when none are.
func (l *planned) take(unit int64, units int, crc uint32) *planned {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ranges == nil || l.unit != unit || l.units != units || l.crc != crc {
		return nil
	}
	p := &planned{unit: l.unit, units: l.units, crc: l.crc, ranges: l.ranges, dicts: l.dicts, dictCRC: l.dictCRC, chunkDicts: l.chunkDicts}
	l.ranges, l.dicts, l.chunkDicts = nil, nil, nil
	return p
}

// drop forgets the bytes left.
func (l *planned) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ranges, l.dicts, l.chunkDicts = nil, nil, nil
}
