-- The tables an operation created, since DDL here commits the transaction
-- it runs in (sink.Limits.DDLCommits). Each is recorded, committed, before
-- the statement that creates it, so that what the operation made is known
-- whatever is killed: a rerun of its plan, a refusal, an abandoned or
-- undone import drop it again, as a rollback does on the other databases.
-- planned is 1 once the plan that needs the table committed: a table
-- recorded unplanned was made by an attempt killed before its plan was
-- stored, and a rerun drops it before it plans again.
-- Idempotent (IF NOT EXISTS): it commits by itself, before the version row.
CREATE TABLE IF NOT EXISTS {{prefix}}created (
    table_name  VARCHAR(128) NOT NULL,
    file_id     VARCHAR(512) NOT NULL,
    created     VARCHAR(128) NOT NULL,
    planned     INT          NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, file_id, created)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
