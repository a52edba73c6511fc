// Package sinktest is the conformance suite every sink dialect must pass:
// what Ensure creates and accepts, what Write counts, what it stores and
// what it leaves alone, in ordinal and natural-key mode, on a real
// database.
//
// A dialect's tests call [Run] with a function that opens an empty database
// of that dialect. Stored values are read back through database/sql and
// rendered by the kind the dialect's own Describe reports, so that the same
// expectations hold whether a dialect stores booleans as 0/1 or as
// booleans, timestamps as text or as timestamps, JSON as text or as jsonb.
// Checks of how a dialect lays tables out (declared types, storage) stay in
// its own tests.
package sinktest
