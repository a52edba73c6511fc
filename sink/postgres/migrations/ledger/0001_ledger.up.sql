-- Operations: one row per (target table, file ID), kept forever as identity
-- evidence. Times are Unix milliseconds by the database clock. The columns
-- are those of the SQLite migration, so that one spelling of the ledger's
-- statements serves both; planned stays an integer (0 or 1) for that reason.
CREATE TABLE {{prefix}}operations (
    table_name      text    NOT NULL,
    file_id         text    NOT NULL,
    file_key        bigint  NOT NULL,
    state           text    NOT NULL CHECK (state IN ('processing', 'failed', 'completed', 'refused')),
    content_digest  text    NOT NULL,
    mapping_digest  text    NOT NULL,
    mapping         text    NOT NULL,
    file_path       text    NOT NULL,
    file_size       bigint  NOT NULL,
    planned         integer NOT NULL DEFAULT 0,
    lease_attempt   text,
    lease_expires   bigint,
    created_at      bigint  NOT NULL,
    updated_at      bigint  NOT NULL,
    completed_at    bigint,
    completed_by    text,
    outcome         text,
    attempts        bigint  NOT NULL DEFAULT 0,
    rows_read       bigint  NOT NULL DEFAULT 0,
    rows_inserted   bigint  NOT NULL DEFAULT 0,
    rows_updated    bigint  NOT NULL DEFAULT 0,
    rows_unchanged  bigint  NOT NULL DEFAULT 0,
    rows_stale      bigint  NOT NULL DEFAULT 0,
    rows_rejected   bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, file_id)
);

-- Attempts: one row per invocation that worked on an operation.
CREATE TABLE {{prefix}}attempts (
    attempt_id      text    NOT NULL PRIMARY KEY,
    table_name      text    NOT NULL,
    file_id         text    NOT NULL,
    trigger         text    NOT NULL,
    host            text    NOT NULL,
    pid             bigint  NOT NULL,
    proc_start      bigint  NOT NULL DEFAULT 0,
    file_path       text    NOT NULL,
    started_at      bigint  NOT NULL,
    heartbeat_at    bigint  NOT NULL,
    ended_at        bigint,
    outcome         text,
    recovered_from  text,
    error           text,
    rows_read       bigint  NOT NULL DEFAULT 0,
    rows_inserted   bigint  NOT NULL DEFAULT 0,
    rows_updated    bigint  NOT NULL DEFAULT 0,
    rows_unchanged  bigint  NOT NULL DEFAULT 0,
    rows_stale      bigint  NOT NULL DEFAULT 0,
    rows_rejected   bigint  NOT NULL DEFAULT 0,
    partitions_committed bigint NOT NULL DEFAULT 0,
    partitions_skipped   bigint NOT NULL DEFAULT 0,
    recovered_leases     bigint NOT NULL DEFAULT 0
);
-- Index names cannot be schema-qualified: an index lives in its table's schema.
CREATE INDEX attempts_operation ON {{prefix}}attempts (table_name, file_id, started_at);

-- Rejects: bad rows within --max-rejects, under their original identity.
CREATE TABLE {{prefix}}rejects (
    table_name   text    NOT NULL,
    file_id      text    NOT NULL,
    ordinal      bigint  NOT NULL,
    byte_offset  bigint  NOT NULL,
    column_name  text,
    raw_value    text,
    code         text    NOT NULL,
    message      text    NOT NULL,
    attempt_id   text    NOT NULL,
    created_at   bigint  NOT NULL,
    PRIMARY KEY (table_name, file_id, ordinal)
);

-- Files: the file ID behind each file key that target rows carry as lineage.
CREATE TABLE {{prefix}}files (
    file_key  bigint  NOT NULL PRIMARY KEY,
    file_id   text    NOT NULL
);
