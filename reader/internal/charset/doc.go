// Package charset turns the bytes of a text file in another encoding than
// UTF-8 into the UTF-8 the reader's scanners read: the canonical names of
// the WHATWG encodings ([EncodingName]), the byte order marks that decide
// a file's encoding ([Sniff]), and decoders that make a byte the encoding
// cannot read a bad row rather than a silent U+FFFD.
package charset
