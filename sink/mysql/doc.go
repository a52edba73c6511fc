// Package mysql is the MariaDB and MySQL driver of package sink, in
// progress: it connects, migrates and runs the ledger's and the
// checkpoints' operations, and passes the conformance suite's
// drivertest.RunLedger (the outbox included) and drivertest.RunCheckpoint
// on MariaDB 10.11. Of its target tables it describes them (Describe, with
// the value rules of DECIMAL), holds their columns, deletes a file's rows
// and sweeps a snapshot's scope (SweepApply: DELETE t FROM … AS t, since
// MariaDB before 11.6 takes no alias in DELETE FROM); Compare, Merge and
// Classify still have the other databases' spelling; creating and evolving them and the Writer (Ensure, AddColumn,
// Widen, Writer), and so drivertest.RunTarget, are not written yet: those
// methods fail with a *sink.ConfigError, and the driver is not in the
// registry (pipeline.Drivers), so no --into URL reaches it.
//
// It takes mysql://user:password@host:3306/database and mariadb://…
// URLs (parseDSN), through github.com/go-sql-driver/mysql. Idemport's own
// tables live in that database, named "idemport_…" (Prefix).
//
// Every connection is set up alike (session): utf8mb4, a strict sql_mode
// with ANSI_QUOTES and PIPES_AS_CONCAT, so that the statements written once
// for every database in standard SQL (sink/internal/stdsql) mean the same
// here; the time zone UTC; READ COMMITTED; and lock waits bounded by
// Settings.BusyTimeout. The statements MariaDB spells apart are the
// driver's own: upserts are INSERT … ON DUPLICATE KEY UPDATE (an insert
// that must change nothing updates a key column to itself, since INSERT
// IGNORE would also turn a strict-mode error into a warning); trigger, a
// reserved word, is quoted; the outbox's claim reads in order without
// locking and then locks one delivery by its key (ledger.go); and Lock
// writes a row of the table idemport_locks, since GET_LOCK survives the
// transaction's rollback.
//
// Any DDL commits the transaction it runs in, on MariaDB and MySQL alike.
// A migration file therefore cannot share a transaction with the row that
// records it: each of its statements is idempotent (IF NOT EXISTS), so that
// a process killed between them runs the file again harmlessly.
//
// MariaDB 10.6 or later is needed (SKIP LOCKED). MySQL 8 would need: a
// collation of its own for keys (utf8mb4_0900_bin; utf8mb4_nopad_bin is
// MariaDB's), ADD COLUMN without IF NOT EXISTS (guarded by a catalogue
// check), transaction_isolation where the tests read tx_isolation,
// PruneEvents without a subquery on the table it deletes from, and
// VALUES() in ON DUPLICATE KEY UPDATE, deprecated there, as a row alias.
// Since a Driver holds no state, that is a second driver type or a setting
// of the connection.
package mysql
