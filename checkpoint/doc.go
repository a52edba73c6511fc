// Package checkpoint stores an operation's partition plan and the claims
// and completion marks of its partitions, in the target database.
//
// It speaks to the database through its driver ([Driver], which every
// sink.Driver satisfies): migrations, placeholders, the clock by which
// leases are judged and the lock that keeps two claims apart are the
// driver's, so the statements are one spelling for every database.
//
// A partition is claimed with a lease before it is read, and marked done in
// the same transaction as its effects. [Store.Fence] at the start of that
// transaction and [Store.Complete] at its end both require that the caller
// still holds the claim, so an attempt whose lease was taken over while it
// was stalled can never commit the partition again.
package checkpoint
