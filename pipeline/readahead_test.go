package pipeline

import "testing"

// TestReadAhead: a reader of whole partitions' batches (PostgreSQL's and
// MariaDB's default, up to partition.BatchBytes each) runs 2 batches
// ahead of its writer, one of SQLite's 8,192-row batches 8.
func TestReadAhead(t *testing.T) {
	for _, tc := range []struct{ rows, want int }{
		{int(min(100_000, maxBatchRows)), 2},
		{maxBatchRows, 2},
		{8192, 8},
		{1, 8},
	} {
		if got := readAhead(tc.rows); got != tc.want {
			t.Errorf("readAhead(%d) = %d, want %d", tc.rows, got, tc.want)
		}
	}
}
