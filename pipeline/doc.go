// Package pipeline imports files exactly once in effect. It composes the
// leaf packages: reader (file bytes), ledger (operations and attempts),
// checkpoint (plans and partition marks) and sink (target tables), and owns
// the transaction in which a partition's effects and its marks commit.
//
// [Open] chooses the target database's driver by the DSN from a
// sink.Registry ([Drivers] by default) and hands that one sink.Driver to
// the ledger, the checkpoints and the writers: the pipeline never asks
// which database it writes to (a test guards this), only what the driver
// can do.
//
// An import goes identify → claim → plan → apply → finalize:
//
//   - identify hashes the file and computes the fingerprint (content digest
//     and mapping digest) of the operation (target table, file ID);
//   - claim decides, in one transaction, what this run does (the decision
//     table of docs/reference.md) and records the attempt;
//   - plan validates every row and cuts the file into partitions, refusing
//     the file before any effect when it has too many bad rows; the plan is
//     stored and reused by every later attempt;
//   - apply claims partitions with leases and upserts each in one
//     transaction that also marks it done, so a crash anywhere leaves either
//     all or nothing of a partition;
//   - finalize stores the outcome, which reruns return.
//
// The command-line tool is a thin shell over [Engine]: [Engine.Import]
// imports one file; [Engine.ImportAll] imports many as `idemport import`
// and each feed of `idemport run` do, one after another, delivering their
// events within one budget, and its [Summary] gives the results, what the
// exit status depends on ([Summary.NotClean]) and the numbers of the
// metrics file ([Summary.Metrics], with [Engine.LedgerMetrics]). The
// operator's commands on what imports left (status, history, gc…) are in
// package pipeline/ops, which imports this one.
package pipeline
