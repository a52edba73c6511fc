// Package reader turns source files into Arrow record batches whose rows carry
// their ordinal in the file.
//
// It owns everything that depends on a file's bytes: format detection and
// decompression ([Open]), the content digest ([Digest]), the one-pass hash
// and plan ([StartHashRead], [ScanOptions].Shared), the plan pass that
// counts, validates and cuts a file into partitions ([File.Scan]), and the
// partition reader that replays one partition of a stored plan, seeking to its
// byte offset where the format allows ([File.Partition]).
//
// Every byte is read through an [idemtype.Source]: [OpenFileSource] gives
// one for a local file ([OpenPath] opens a path with it), and a remote
// object may be another.
//
// # Shape
//
// The package is a facade over two wings, and is what callers import. The
// facade holds [File] and [Open] (open.go), [File.Scan], [File.Partition]
// and [File.RawRows], which hand each file to its wing (plan.go), the
// settling of superseded keys, which re-reads partitions of either wing
// (supersede.go), the source, the digests and the one-pass hash and plan
// (source.go, digest.go, hashread.go), the counters (stats.go), and the
// public names of what the wings share (names.go).
//
// The text wing, package reader/text, reads CSV, TSV and JSONL (in any
// WHATWG encoding) as a stream, and the sheets of Excel workbooks: the line buffer, the scanners, the header, the two-stage plan
// pass, the partition reader and the Arrow batches it builds. The columnar
// wing, package reader/columnar, reads Parquet and Arrow IPC files by
// random access, one unit (row group or record batch) at a time: the unit
// interface and its plan pass, the formats, the flatbuffer checks before
// arrow-go decodes anything, the checksummed byte ranges the decoders read
// from, and the conversion of Arrow types and values to the reader's.
//
// What both wings need lives under reader/internal, one package per
// concept, none importing a wing or the facade:
//
//   - input: the opened source file both wings read ([Options], the
//     format and compression, the decompressed stream, the header) and
//     [ParseError] with the errors callers branch on;
//   - partition: what a plan pass yields and a partition reader returns
//     ([Plan], [Batch], the scan options, the partition sizes);
//   - value: cells, typed values and their conversion, type inference,
//     decimals, the column schema, the reject codes and text checks, and
//     the target's limits ([Limit]), checked with the value rules its
//     driver supplies (Options.Rules: its decimal and JSON types);
//   - keys: the key bytes and hashes that find superseded rows;
//   - reject: the fields a rejected row keeps ([RejectFields]);
//   - charset: the decoding of text in other encodings than UTF-8.
//
// The facade imports the wings and these packages; a wing imports them,
// never the facade or the other wing (internal/archtest checks).
//
// Text formats (CSV, TSV, JSONL) are parsed by hand-written scanners and
// converted into Arrow batches directly; Arrow's own CSV reader is too slow for
// the hot path. A corrupt input is reported as a [*ParseError] naming the file,
// row, byte offset and column, never as a panic.
//
// Parquet and Arrow IPC files (file and stream format) are decoded by
// arrow-go, one row group or record batch at a time, and their values are
// converted to the reader's types: the batches of every format have the
// Arrow schema [Schema.Arrow] gives. Each row group or record batch is a
// partition, read alone and checked against the plan before it is decoded.
// Decoder panics on hostile bytes are recovered and reported as a
// [*ParseError] naming the file and the row group or record batch; metadata
// that would make a decoder allocate without bound is refused before it
// reaches the decoder.
//
// How Arrow types become reader types: bool is [idemtype.Bool]; integers
// up to 64 bits are [idemtype.Int64] (a uint64 above the int64 maximum is
// a bad row, code "range"); floats are [idemtype.Float64]; timestamps of
// any unit and zone are [idemtype.Timestamp], in microseconds UTC (a
// non-zero part finer than a microsecond is a bad row, code "precision");
// strings are [idemtype.String]; decimals are [idemtype.Decimal], in the
// canonical decimal text; dates, times, durations, intervals and binary
// values are [idemtype.String] holding their exact text (binary as \x and
// lowercase hex); dictionaries are their values' type; lists, structs and
// maps are [idemtype.JSON]; a column of the null type is an all-null
// [idemtype.String]. Any other type refuses the file, naming the column.
package reader
