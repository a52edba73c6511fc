package columnar

import (
	"slices"
	"sync"
)

// The plan pass reads every row group's dictionaries (a chunkDict per
// column chunk a pageChunk reads), and each row group's partition reader
// reads them again: in the Rust crate's file of ten row groups of 100k
// orders rows, each group's dictionary pages are 5 MB of its 9.6 MB of
// decompressed pages, and decompressing them was two thirds of the
// snappy decoding of an import. The last row group's dictionaries go
// with its bytes (planned); those of the groups before it are kept here,
// as the pass ends each group, for its partition reader to take instead
// of reading its dictionary pages again. They are kept within a bound
// (leftDictsMax), in the order the pass reads the groups, which is the
// order their partitions are written in, the latest first: the first
// groups' partitions are those an overlap writes beside the pass, whose
// reader is of a File of its own, and once the pass has ended the groups
// after them are read from the plan's File, in order, the last group's
// with its bytes. Only a dictionary that is memory of its own (a
// decompressed page) is kept: one of a chunk stored uncompressed is the
// group's loaded bytes, which it would hold, and its reader reads it
// again (walking its values, with nothing to decompress).

// leftDictsMax bounds the bytes of the dictionaries kept (leftDicts).
const leftDictsMax = 32 << 20

// leftDicts holds the dictionaries the plan pass left for the partition
// readers of row groups before the last, by row group.
type leftDicts struct {
	mu     sync.Mutex
	limit  int64 // the bound on held; 0: leftDictsMax
	held   int64 // the bytes of the dictionaries kept
	groups map[int64]leftGroup
	order  []int64 // the groups kept, in the order they were left
}

// leftGroup is one row group's dictionaries, read from bytes whose
// CRC-32C is crc (the plan's partition CRC), by column index.
type leftGroup struct {
	crc   uint32
	dicts map[int]*chunkDict
	size  int64
}

// leave keeps those of dicts, row group k's dictionaries read from bytes
// of CRC crc, that are memory of their own, forgetting those of the
// groups left first as far as the bound needs; it reports whether it
// kept them (not when they alone are over the bound).
func (l *leftDicts) leave(k int64, crc uint32, dicts map[int]*chunkDict) bool {
	own := map[int]*chunkDict{}
	var size int64
	for col, d := range dicts {
		if d.own {
			own[col] = d
			size += int64(cap(d.dict)) + 4*int64(cap(d.offs))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := l.limit
	if limit == 0 {
		limit = leftDictsMax
	}
	l.forget(k) // a pass started again reads the group again
	if len(own) == 0 || size > limit {
		return false
	}
	for l.held+size > limit {
		l.forget(l.order[0])
	}
	if l.groups == nil {
		l.groups = map[int64]leftGroup{}
	}
	l.groups[k] = leftGroup{crc: crc, dicts: own, size: size}
	l.order = append(l.order, k)
	l.held += size
	return true
}

// forget forgets the dictionaries kept for row group k.
func (l *leftDicts) forget(k int64) {
	g, ok := l.groups[k]
	if !ok {
		return
	}
	delete(l.groups, k)
	l.order = slices.DeleteFunc(l.order, func(x int64) bool { return x == k })
	l.held -= g.size
}

// take returns the dictionaries kept for row group k read from bytes of
// CRC crc, and forgets them; nil when there are none.
func (l *leftDicts) take(k int64, crc uint32) map[int]*chunkDict {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.groups[k]
	if !ok || g.crc != crc {
		return nil
	}
	l.forget(k)
	return g.dicts
}

// drop forgets every dictionary kept.
func (l *leftDicts) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groups, l.order, l.held = nil, nil, 0
}
