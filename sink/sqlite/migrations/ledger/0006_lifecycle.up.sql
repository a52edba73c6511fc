-- Lifecycle states: an operation can be undone (its effects removed by
-- `idemport undo`) or abandoned (its source changed under an attempt). Such
-- an operation, or a refused or failed one without effect that a run with
-- another fingerprint supersedes, is moved to operations_past when a new
-- operation for the same (table, file ID) starts, so the identity evidence
-- is kept. SQLite cannot alter a CHECK constraint: the table is rebuilt.
CREATE TABLE {{prefix}}operations_rebuilt (
    table_name      TEXT    NOT NULL,
    file_id         TEXT    NOT NULL,
    file_key        INTEGER NOT NULL,
    state           TEXT    NOT NULL CHECK (state IN ('processing', 'failed', 'completed', 'refused', 'undone', 'abandoned')),
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
INSERT INTO {{prefix}}operations_rebuilt SELECT * FROM {{prefix}}operations;
DROP TABLE {{prefix}}operations;
ALTER TABLE {{prefix}}operations_rebuilt RENAME TO {{prefix}}operations;

-- Past operations: earlier operations of a (table, file ID) that a new one
-- replaced, in their final state (superseded, undone or abandoned).
CREATE TABLE {{prefix}}operations_past (
    table_name      TEXT    NOT NULL,
    file_id         TEXT    NOT NULL,
    file_key        INTEGER NOT NULL,
    state           TEXT    NOT NULL,
    content_digest  TEXT    NOT NULL,
    mapping_digest  TEXT    NOT NULL,
    mapping         TEXT    NOT NULL,
    file_path       TEXT    NOT NULL,
    file_size       INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    completed_at    INTEGER,
    completed_by    TEXT,
    outcome         TEXT,
    attempts        INTEGER NOT NULL,
    rows_read       INTEGER NOT NULL,
    rows_inserted   INTEGER NOT NULL,
    rows_updated    INTEGER NOT NULL,
    rows_unchanged  INTEGER NOT NULL,
    rows_stale      INTEGER NOT NULL,
    rows_rejected   INTEGER NOT NULL,
    replaced_at     INTEGER NOT NULL
);
CREATE INDEX {{prefix}}operations_past_key ON {{prefix}}operations_past (table_name, file_id, created_at);
