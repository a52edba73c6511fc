// Package postgres is the PostgreSQL driver of package sink: everything
// about PostgreSQL that idemport needs, from connecting (Open) and the
// migrations of the ledger and the checkpoints to the batch writer.
// Idemport's own tables live in a schema of their own (Settings.StateSchema),
// an operation is locked with an advisory lock, and claims lock partition
// rows FOR UPDATE SKIP LOCKED.
//
// A table name with a dot is schema-qualified: "sales.orders" is table
// orders in schema sales; an unqualified name is found through the search
// path. Created tables store the kinds as boolean, bigint, double
// precision, timestamptz, text and jsonb. Ordinal-mode tables have the
// primary key (_idemport_file, _idemport_row); natural-key tables have the
// key as their primary key, or use an existing table's primary key or
// unique index, and get nullable bigint lineage columns when they lack them.
//
// Batches are written set-wise. A Writer owns a temporary staging table on
// its connection, with the target's column types. Each batch is copied
// into it (COPY, binary, through the pgx connection under database/sql, so
// inside the caller's transaction), and one INSERT … SELECT … ON CONFLICT
// DO UPDATE … WHERE statement merges it into the target, leaving unchanged
// and stale rows untouched and telling inserted rows from updated ones by
// their xmax (in a partitioned table, which returns none, by whether their
// key was in the table as the statement began). In natural-key mode the rows the merge neither inserted nor
// updated, when there are any, are then told stale from unchanged with a
// join of the staging table and the target, which the merge left locked
// as it judged them; and a batch that holds a key more than once is merged
// in rounds, the n-th occurrence of each key in the n-th round, because
// one statement cannot touch a row twice.
//
// A batch none of whose keys is stored is copied straight into the target
// instead, at the cost of a plain COPY. In ordinal mode a query on the
// batch's key range tells; in natural-key mode the COPY runs under a
// savepoint, and a stored key (the target's unique index refuses it) or a
// deadlock rolls it back to the savepoint, and the batch is staged and
// merged. A batch that found a stored key stops direct copies on its
// Writer until a merged batch inserts every one of its rows.
//
// Its Writer needs connections of the pgx database/sql driver
// (github.com/jackc/pgx/v5/stdlib, driver name "pgx").
package postgres
