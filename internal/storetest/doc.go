// Package storetest is the conformance suite that idemport's stores — the
// ledger and the checkpoints — must pass on every database they support.
//
// The stores share one spelling of their SQL across dialects (placeholders
// rebound, the clock from dialect.Now), so the suite runs the same cases on
// each database: [RunLedger] from the ledger's tests and [RunCheckpoint] from
// the checkpoint's, each once with [SQLite] and once with [Postgres]. Cases
// that depend on a database's catalog stay in the package's own tests.
package storetest
