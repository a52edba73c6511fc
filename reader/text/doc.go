// Package text is the reader's text wing: it reads CSV, TSV and JSONL
// files as a stream, for the facade, package reader, which is what
// callers use; and the sheet of an Excel workbook, whose rows it decodes
// into the same cells (sheet.go). A file in another encoding than UTF-8
// is decoded as it is read (reader/internal/charset); the
// options that choose columns (--select, --rename, --columns) project a
// CSV row's cells (projScanner) or a JSONL line's keys.
//
// The line buffer (buffer.go) checksums every byte it hands out, so that
// a partition's CRC-32C is known when the plan pass cuts it; the scanners
// (csv.go, jsonl.go) are hand-written, because Arrow's own CSV reader and
// encoding/json are too slow for the hot path, and turn a row into cells
// without copying. The header of a CSV or TSV file is read at [Open]
// (file.go). The plan pass (planpass.go, [File.Scan]) runs in two stages on
// two cores: a tokenizer finds the rows, cuts partitions and checksums
// them, and a validator checks and infers the rows it hands over, a chunk
// at a time. A [PartitionReader] (scan.go) replays one partition of a
// stored plan from its byte offset, making the same decisions as the plan
// pass, and builds Arrow batches from the values (batch.go).
//
// What it shares with the columnar wing is in the packages under
// reader/internal (see package reader); this package imports neither the
// facade nor the columnar wing.
package text
