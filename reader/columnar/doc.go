// Package columnar is the reader's columnar wing: it reads Parquet and
// Arrow IPC files (file and stream format) for the facade, package reader,
// which is what callers use.
//
// A file is read by random access, one unit at a time: a Parquet row group
// or an Arrow record batch is a partition, read alone and checked against
// the plan before it is decoded (columnar.go, file.go). The formats
// (parquet.go, parquetsplit.go, parquetchunk.go, ipc.go) read only the byte ranges their
// metadata declares, checksummed as they are loaded (byterange.go); the
// flatbuffer checks (fbcheck.go) refuse metadata that would make arrow-go
// allocate without bound before it decodes anything, and decoder panics on
// hostile bytes are recovered and reported as a *input.ParseError naming the
// unit. Arrow types and values are converted to the reader's types
// (arrowtype.go, arrowconv.go, arrowtext.go), so that every format's
// batches have the same Arrow schema.
//
// What it shares with the text wing is in the packages under
// reader/internal (see package reader); this package imports neither the
// facade nor the text wing.
package columnar
