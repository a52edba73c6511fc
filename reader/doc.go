// Package reader turns source files into Arrow record batches whose rows carry
// their ordinal in the file.
//
// It owns everything that depends on a file's bytes: format detection and
// decompression ([Open]), the content digest ([Digest]), the plan pass that
// counts, validates and cuts a file into partitions ([File.Scan]), and the
// partition reader that replays one partition of a stored plan, seeking to its
// byte offset where the format allows ([File.Partition]).
//
// Text formats (CSV, TSV, JSONL) are parsed by hand-written scanners and
// converted into Arrow batches directly; Arrow's own CSV reader is too slow for
// the hot path. A corrupt input is reported as a [*ParseError] naming the file,
// row, byte offset and column, never as a panic.
package reader
