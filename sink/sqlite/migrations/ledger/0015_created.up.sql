-- The tables an operation created, on a database whose DDL commits the
-- transaction it runs in (MariaDB, MySQL: sink.Limits.DDLCommits). Each is
-- recorded, committed, before the statement that creates it, so that what
-- the operation made is known whatever is killed: a rerun of its plan, a
-- refusal, an abandoned or undone import drop it again, as a rollback
-- would. planned is 1 once the plan that needs the table committed: a
-- table recorded unplanned was made by an attempt killed before its plan
-- was stored, and a rerun drops it before it plans again. Elsewhere a
-- table is created inside the transaction that stores the plan, and this
-- table stays empty.
CREATE TABLE {{prefix}}created (
    table_name  TEXT NOT NULL,
    file_id     TEXT NOT NULL,
    created     TEXT NOT NULL,
    planned     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, file_id, created)
);
