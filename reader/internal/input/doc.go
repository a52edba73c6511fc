// Package input is the source file both wings of the reader read: what an
// opened file is ([File]: its source, format, compression, [Options],
// header and counters), its decompressed and decoded [Stream], the
// choosing and renaming of its columns ([Options.Project]), the hashing
// of its bytes as they are read ([HashingReader]), and [ParseError] with
// the errors callers branch on.
package input
