// Package keys finds the rows of a file that a later row with the same
// natural key supersedes: the bytes that stand for a key's values, equal
// when the values are ([AppendText], [AppendValue], [AppendDecimal]), and
// the [Index] of their hashes that names the candidate rows.
package keys
