package reader

import (
	"io"
	"sync/atomic"
)

// Stats counts the work a File has done since Open, so that callers can
// report it and tests can prove what was (not) read.
type Stats struct {
	// BytesRead is the number of bytes read from the file on disk, by Open,
	// Scan and every partition reader: compressed bytes for a compressed
	// file. A resumed import that skips done partitions reads none of their
	// bytes where the format can seek.
	BytesRead int64 `json:"bytes_read"`
	// RowGroupsRead is the number of Parquet row groups and Arrow record
	// batches decoded. It stays 0 for text formats.
	RowGroupsRead int64 `json:"row_groups_read"`
}

// fileStats holds a File's counters; they are updated by concurrent
// partition readers.
type fileStats struct {
	bytes  atomic.Int64
	groups atomic.Int64
}

// Stats returns the file's counters so far. It is safe for concurrent use.
func (f *File) Stats() Stats {
	return Stats{BytesRead: f.stats.bytes.Load(), RowGroupsRead: f.stats.groups.Load()}
}

// countingReader counts the bytes read through it into a File's stats.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
