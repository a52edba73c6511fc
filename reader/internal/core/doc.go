// Package core is what the reader's two wings, reader/text and
// reader/columnar, share, in one place: the state of an opened file
// ([File]: source, format, options, header, counters) and its decompressed
// [Stream]; the options ([Options]) and the target's limits ([Limit],
// [CheckLimits]); the column types and schema; the [Plan] and the [Batch];
// cells, values and type inference ([Cell], [Value], [ConvertText],
// [Inference]); decimals; the key hashes of superseded rows ([KeyIndex]);
// the reject codes and the text checks every format applies ([CheckText]);
// the fields a rejected row keeps ([AppendFields], [RejectFields]); and
// [ParseError] with the errors callers branch on.
//
// The facade, package reader, re-exports the public names. Core imports
// no other package of the reader.
package core
