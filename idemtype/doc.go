// Package idemtype holds the primitives idemport's packages share: the
// interfaces and small value types that more than one of reader, sink,
// ledger, checkpoint and pipeline speak, so that none of them keeps a copy
// of another's. It is a leaf: it imports nothing of idemport, and anything
// may import it.
//
// It holds [Source], the bytes of an input file wherever they live (a local
// file, an object in a bucket, a URL).
package idemtype
