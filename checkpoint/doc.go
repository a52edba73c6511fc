// Package checkpoint stores an operation's partition plan and the claims
// and completion marks of its partitions, in the target database.
//
// It speaks to the database through its driver ([Driver], which every
// sink.Driver satisfies) in database operations ([Ops]: save a plan, claim
// a partition, fence it, complete it, renew leases…), whose statements
// are the driver's. What their results mean (a claim not held, a lease
// taken over, a done partition's counters) is decided here.
//
// A partition is claimed with a lease before it is read, and marked done in
// the same transaction as its effects. [Store.Fence] at the start of that
// transaction and [Store.Complete] at its end both require that the caller
// still holds the claim, so an attempt whose lease was taken over while it
// was stalled can never commit the partition again.
package checkpoint
