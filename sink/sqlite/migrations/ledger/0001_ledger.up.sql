-- Operations: one row per (target table, file ID), kept forever as identity
-- evidence. Times are Unix milliseconds by the database clock.
CREATE TABLE {{prefix}}operations (
    table_name      TEXT    NOT NULL,
    file_id         TEXT    NOT NULL,
    file_key        INTEGER NOT NULL,
    state           TEXT    NOT NULL CHECK (state IN ('processing', 'failed', 'completed', 'refused')),
    content_digest  TEXT    NOT NULL,
    mapping_digest  TEXT    NOT NULL,
    mapping         TEXT    NOT NULL,
    file_path       TEXT    NOT NULL,
    file_size       INTEGER NOT NULL,
    planned         INTEGER NOT NULL DEFAULT 0,
    lease_attempt   TEXT,
    lease_expires   INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    completed_at    INTEGER,
    completed_by    TEXT,
    outcome         TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    rows_read       INTEGER NOT NULL DEFAULT 0,
    rows_inserted   INTEGER NOT NULL DEFAULT 0,
    rows_updated    INTEGER NOT NULL DEFAULT 0,
    rows_unchanged  INTEGER NOT NULL DEFAULT 0,
    rows_stale      INTEGER NOT NULL DEFAULT 0,
    rows_rejected   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, file_id)
);

-- Attempts: one row per invocation that worked on an operation.
CREATE TABLE {{prefix}}attempts (
    attempt_id      TEXT    NOT NULL PRIMARY KEY,
    table_name      TEXT    NOT NULL,
    file_id         TEXT    NOT NULL,
    trigger         TEXT    NOT NULL,
    host            TEXT    NOT NULL,
    pid             INTEGER NOT NULL,
    proc_start      INTEGER NOT NULL DEFAULT 0,
    file_path       TEXT    NOT NULL,
    started_at      INTEGER NOT NULL,
    heartbeat_at    INTEGER NOT NULL,
    ended_at        INTEGER,
    outcome         TEXT,
    recovered_from  TEXT,
    error           TEXT,
    rows_read       INTEGER NOT NULL DEFAULT 0,
    rows_inserted   INTEGER NOT NULL DEFAULT 0,
    rows_updated    INTEGER NOT NULL DEFAULT 0,
    rows_unchanged  INTEGER NOT NULL DEFAULT 0,
    rows_stale      INTEGER NOT NULL DEFAULT 0,
    rows_rejected   INTEGER NOT NULL DEFAULT 0,
    partitions_committed INTEGER NOT NULL DEFAULT 0,
    partitions_skipped   INTEGER NOT NULL DEFAULT 0,
    recovered_leases     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX {{prefix}}attempts_operation ON {{prefix}}attempts (table_name, file_id, started_at);

-- Rejects: bad rows within --max-rejects, under their original identity.
CREATE TABLE {{prefix}}rejects (
    table_name   TEXT    NOT NULL,
    file_id      TEXT    NOT NULL,
    ordinal      INTEGER NOT NULL,
    byte_offset  INTEGER NOT NULL,
    column_name  TEXT,
    raw_value    TEXT,
    code         TEXT    NOT NULL,
    message      TEXT    NOT NULL,
    attempt_id   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (table_name, file_id, ordinal)
);

-- Files: the file ID behind each file key that target rows carry as lineage.
CREATE TABLE {{prefix}}files (
    file_key  INTEGER NOT NULL PRIMARY KEY,
    file_id   TEXT    NOT NULL
);
