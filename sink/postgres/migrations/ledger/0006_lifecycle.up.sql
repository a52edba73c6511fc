-- Lifecycle states: an operation can be undone (its effects removed by
-- `idemport undo`) or abandoned (its source changed under an attempt). Such
-- an operation, or a refused or failed one without effect that a run with
-- another fingerprint supersedes, is moved to operations_past when a new
-- operation for the same (table, file ID) starts, so the identity evidence
-- is kept.
ALTER TABLE {{prefix}}operations DROP CONSTRAINT operations_state_check;
ALTER TABLE {{prefix}}operations ADD CONSTRAINT operations_state_check
    CHECK (state IN ('processing', 'failed', 'completed', 'refused', 'undone', 'abandoned'));

-- Past operations: earlier operations of a (table, file ID) that a new one
-- replaced, in their final state (superseded, undone or abandoned).
CREATE TABLE {{prefix}}operations_past (
    table_name      text    NOT NULL,
    file_id         text    NOT NULL,
    file_key        bigint  NOT NULL,
    state           text    NOT NULL,
    content_digest  text    NOT NULL,
    mapping_digest  text    NOT NULL,
    mapping         text    NOT NULL,
    file_path       text    NOT NULL,
    file_size       bigint  NOT NULL,
    created_at      bigint  NOT NULL,
    updated_at      bigint  NOT NULL,
    completed_at    bigint,
    completed_by    text,
    outcome         text,
    attempts        bigint  NOT NULL,
    rows_read       bigint  NOT NULL,
    rows_inserted   bigint  NOT NULL,
    rows_updated    bigint  NOT NULL,
    rows_unchanged  bigint  NOT NULL,
    rows_stale      bigint  NOT NULL,
    rows_rejected   bigint  NOT NULL,
    replaced_at     bigint  NOT NULL
);
CREATE INDEX operations_past_key ON {{prefix}}operations_past (table_name, file_id, created_at);
