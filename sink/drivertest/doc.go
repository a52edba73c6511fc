// Package drivertest is the conformance suite every sink.Driver must pass,
// on a real database of its kind, split by area with one entry point each.
//
// [RunTarget] checks the target tables: what Ensure creates and accepts,
// what Write counts, what it stores and what it leaves alone, in ordinal
// and natural-key mode, and the target operations (savepoints, dropping a
// table). [RunLedger] and [RunCheckpoint] check the stores that
// live beside them through the same driver: the ledger (operations,
// attempts, leases, rejects, the outbox) and the checkpoints (plans,
// claims, fencing), each on a database opened by the driver's own Open
// ([OpenStore]), so its migrations, clock and locks are the ones tested.
//
// A driver's tests call [RunTarget] with a function that opens an empty database
// of that kind. Stored values are read back through database/sql and
// rendered by the kind the driver's own Describe reports, so that the same
// expectations hold whether a driver stores booleans as 0/1 or as
// booleans, timestamps as text or as timestamps, JSON as text or as jsonb.
// Checks of how a driver lays tables out (declared types, storage) stay in
// its own tests.
package drivertest
