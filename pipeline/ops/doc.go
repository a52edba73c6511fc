// Package ops holds the operator's commands on a target that imports
// (package pipeline) have written: status and history of operations,
// verify, the stored rejects, their export and the replay of corrected
// ones, the undo of an import, gc, and the outbox's list and delivery. It
// is built on what import shares with it (the open target, the ledger's
// file lookups, the records an operation stores, the judgement of lease
// holders, the events and their delivery) and on import's own stages
// where it must decide as an import would (verify: pipeline.Examine),
// never on an import's run; pipeline does not import it.
//
// [Open] opens the target as pipeline.Open does, with the same
// pipeline.Options; an [Operator] is safe for concurrent use.
package ops
