// Package ledger records what idemport has done and decides what a run
// should do: operations (one per target table and file ID, with their
// fingerprint, state and stored outcome), attempts (one per invocation), the
// planning lease, the rejects quarantine, and the names behind the file keys
// that target rows carry as lineage.
//
// The ledger lives in the target database, and speaks to it through the
// database's driver ([Driver], which every sink.Driver satisfies): its
// migrations, placeholders, clock and locks are the driver's, so the
// ledger's statements are one spelling for every database and the ledger
// never asks which database it is on. Every method that writes takes
// the caller's transaction, so that a partition's effects, its checkpoint
// and its counters commit together. [Decide] is the claim decision table as
// a pure function; the caller runs it inside the transaction that then
// records the decision, so the claim is one atomic step.
package ledger
