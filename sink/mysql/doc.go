// Package mysql is the MariaDB driver of package sink (MySQL 8 not yet:
// see the end): it connects, migrates, runs the ledger's and the
// checkpoints' operations, creates, describes and evolves target tables,
// and writes rows into them; it passes the whole conformance suite
// (drivertest.RunLedger with the outbox, drivertest.RunCheckpoint and
// drivertest.RunTarget) on MariaDB 10.11, and is in the registry
// (pipeline.Drivers) for mysql:// and mariadb:// URLs. The DDL of an
// import (creating its tables, --evolve, lineage columns, dropping its
// staging tables) commits the transaction it runs in (see below), which
// Limits declares (sink.Limits.DDLCommits): the pipeline runs each DDL
// step alone, outside the transactions of rows, records each table an
// operation creates in the ledger (the table created, migration 0015)
// before it creates it, and drops it when the operation's plan never
// commits, or the operation is abandoned or undone. Tables lists the
// DSN's database alone.
//
// Open asks the pipeline for a natural key's rows in key order
// (sink.Database.KeyOrder): InnoDB keeps a table's rows in its primary
// key's B-tree, which rows in key order reach one page after another, so
// the Writer takes each row's ordinal from the batch, never its place.
//
// The Writer (writer.go) writes a batch in one of two ways. A range of
// the file none of whose rows is stored (ordinal mode's first load), or
// a batch of distinct natural keys none of which is stored (the key's
// unique index tells, under a savepoint), is loaded straight into the
// table. Otherwise the batch goes into a
// TEMPORARY staging table of the connection (its creation commits
// nothing), and is moved in per round of repeated keys, in file order.
// By natural key into a table whose one unique key is the key, with no
// trigger (which would see every stored row met updated), a round is one INSERT … SELECT …
// ON DUPLICATE KEY UPDATE: a stored row it meets is written, lineage
// too, when the incoming row differs and is not older (by the version
// column, or by its place in the same file). The assignments run left to
// right, each reading the columns the earlier ones set, so the first
// decides for all, reading the stored row before anything changes, into
// a session variable, and the last ones count the rows met, the older
// and the written, which the Writer reads after the statement: its
// counts are the statement's own decisions. Otherwise a round is an
// UPDATE … JOIN of the changed rows that are not older, then an INSERT
// … SELECT … WHERE NOT EXISTS of the new ones; when rows are left, the
// UPDATE again (sessions read committed, so a key another transaction
// committed after the first UPDATE looked is one the INSERT skips: the
// second UPDATE, reading as it locks, writes it when it is not older);
// the rows still left are counted stale by a join, or unchanged. Rows go through LOAD DATA LOCAL INFILE from
// lines made as the driver sends them (load.go), when the server's local_infile allows,
// or in multi-row INSERT statements of at most 65,535 placeholders and a
// quarter of max_allowed_packet (insert.go), each value exact (bind.go):
// integers as BIGINT, decimals and strings as their text, times as
// DATETIME text in UTC. With LOCAL the server makes warnings of what
// strict mode refuses, cutting or skipping rows, so a load with any
// warning is undone and its batch goes through the INSERTs; the load's
// warnings and rows stored are read in the load's own message (the
// session runs several statements a message). A batch the pipeline
// writes under its savepoint (WriteUnder) takes that savepoint in the
// message of its first statement, undoes a load straight into the table
// by rolling back to it, and leaves it taken when written (the next
// SAVEPOINT of its name replaces it, COMMIT releases it). A value a column
// cannot hold, or a row a constraint refuses, fails the Write with a
// *sink.RowError (rowerror.go), and InnoDB undoes the failed statement
// alone. Of the other target operations, SweepApply deletes with DELETE
// t FROM … AS t, since MariaDB before 11.6 takes no alias in DELETE FROM;
// Merge updates and inserts as the Writer does (merge.go);
// ConstrainStage gives --atomic's staging table the target's CHECKs over
// columns of the same type and collation, and its NOT NULLs (stage.go);
// Classify runs as written for every database; EnsureSeen indexes a
// decimal key through a generated column (seen.go).
//
// The tables Ensure creates (ensure.go) hold what idemport's kinds hold,
// exactly:
//   - A decimal is its canonical text (MEDIUMTEXT), not DECIMAL(65,30),
//     which would keep 1.50 as 1.5 (or 1.500000…) and round or refuse
//     what has more than 30 digits after the point. The column's comment
//     (idemport:decimal) tells Describe it holds decimals; a DECIMAL
//     column a user made is described as one, with its precision, scale
//     and value rules.
//   - A decimal key column keeps the text written and is keyed by its
//     number: a stored generated column (idemport_key_N, commented
//     idemport:key:<column>) holds the text less the zeros ending its
//     fraction (keyExpr, as KeyValue compares keys), and the key is a
//     UNIQUE index on it, since MariaDB takes no generated column in a
//     primary key. So 1.5 and 1.50 are one key, and keys differing past
//     the 30th digit after the point stay two. Describe hides that
//     column and lists the key on the decimal column.
//   - Text key columns (strings, decimals) are VARCHAR, as InnoDB indexes
//     no whole TEXT: each column of a key of n holds an even share of the
//     index's 3,072 bytes, 4 per utf8mb4 character, whatever the kinds of
//     the others (768 characters alone, 384 beside a BIGINT), since the
//     plan pass checks the key's text before it has inferred their kinds
//     (sink.Limits.KeyChars). On the load that creates the table and after
//     it (Describe's MaxChars), a longer value is a bad row of the plan,
//     named by file, row and column, never cut short.
//   - A DATETIME(6) holds a point in time in UTC (the session's zone); a
//     local timestamp is a DATETIME(6) too, commented idemport:local, and
//     Describe tells the two apart by that comment alone.
//   - JSON is a LONGTEXT checked by json_valid, as MariaDB's JSON type is.
//   - Text is utf8mb4_nopad_bin, whatever the database's default, as in
//     idemport's own tables: keys that differ in case or in trailing
//     spaces are two keys, as in the file.
//
// Widen changes a column outside every key (MODIFY COLUMN, keeping NOT
// NULL; MariaDB's casts to text are exact), and leaves one that holds the
// kind, or text, already; a key column is not widened (a
// *sink.ConfigError), and Limits says so (FixedKeys), so that the plan
// refuses a file that needs one widened before any effect, exit 5, rather
// than each attempt failing at it. Widen and AddColumn hold a session
// lock through their ALTER, which LockTable waits for (holdAlters): the
// ALTER of a killed process ends after its evolve lock is gone, and what
// --evolve looks at under that lock is the table as the ALTER leaves
// it. Each of these statements commits the
// transaction it runs in (see below), so the pipeline makes the table and
// its columns before any row is written, each in a step of its own, and
// each is idempotent (IF NOT EXISTS), so a second Ensure or AddColumn, by
// a rerun after a kill or by another worker, finds them made.
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
// locking and then locks one delivery by its key, and the release of a
// dead deliverer's leases changes them one by one by their key (ledger.go);
// and Lock writes a row of the table idemport_locks, since GET_LOCK
// survives the transaction's rollback.
//
// Any DDL commits the transaction it runs in, on MariaDB and MySQL alike.
// A migration file therefore cannot share a transaction with the row that
// records it: each of its statements is idempotent (IF NOT EXISTS), so that
// a process killed between them runs the file again harmlessly. Imports
// differ from SQLite and PostgreSQL in what readers and users see: an
// --evolve column appears, empty, before the rows that need it (with
// --atomic too); a staging table outlives its completing transaction by a
// statement, or until gc after a kill; a first import killed before its
// plan committed leaves its empty table until a rerun drops and remakes
// it; an undone or abandoned import drops the table it created, unless
// another operation holds rows there, never one an earlier operation of
// its table and file ID created (the undo of a --replace import keeps the
// table, as on SQLite and PostgreSQL).
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
