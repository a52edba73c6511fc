// Package stdsql is the SQL of the drivers' operations written once, in
// standard SQL, for the drivers whose SQL is close enough to it: the
// operations on idemport's own state in the target database (the
// checkpoints, and the ledger as it moves here) and on target tables
// (savepoints, dropping a stage). The
// statements are parameterised by the driver's spelling, and a driver
// embeds Operations, which makes them its methods, and declares itself
// the operations its database spells apart.
//
// It holds statements only; what the results mean (a claim not held, a
// lease recovered) is decided above the contract, in checkpoint and
// ledger. The tables are those the drivers' migrations create.
package stdsql

// Spelling is how a driver spells what differs between databases in the
// statements here; the methods mean what sink.Driver says.
type Spelling interface {
	// Rebind rewrites ? placeholders into the database's style.
	Rebind(query string) string
	// Now is the database's current time in Unix milliseconds.
	Now() string
	// SkipLocked is the clause ending a SELECT … LIMIT 1 that locks the
	// row it selects and skips rows others hold; ok false where the
	// database has no row locks.
	SkipLocked(of string) (clause string, ok bool)
}
