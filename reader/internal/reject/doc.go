// Package reject is what the reader keeps of a bad row: every field of it
// as the file held it ([AppendFields], decoded again by [DecodeFields]),
// within the bounds [MaxValue] and [MaxRow], and the [RawRow] a partition
// reader finds again for a row the database refused.
package reject
