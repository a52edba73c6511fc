package reader

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

// Stats returns the file's counters so far. It is safe for concurrent use.
func (f *File) Stats() Stats {
	return Stats{BytesRead: f.f.Stats.Bytes.Load(), RowGroupsRead: f.f.Stats.Groups.Load()}
}
