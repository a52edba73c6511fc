-- Plans: the stored plan of an operation, reused by every later attempt.
CREATE TABLE {{prefix}}plans (
    table_name  TEXT    NOT NULL,
    file_id     TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    row_count   INTEGER NOT NULL,
    partitions  INTEGER NOT NULL,
    attempt_id  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (table_name, file_id)
);

-- Partitions: boundaries, claims and completion marks. A partition is done
-- exactly when its effects committed: both are written in one transaction.
CREATE TABLE {{prefix}}partitions (
    table_name     TEXT    NOT NULL,
    file_id        TEXT    NOT NULL,
    idx            INTEGER NOT NULL,
    first_row      INTEGER NOT NULL,
    row_count      INTEGER NOT NULL,
    rejected       INTEGER NOT NULL,
    byte_offset    INTEGER NOT NULL,
    byte_length    INTEGER NOT NULL,
    crc            INTEGER NOT NULL,
    done           INTEGER NOT NULL DEFAULT 0,
    lease_attempt  TEXT,
    lease_expires  INTEGER,
    done_by        TEXT,
    done_at        INTEGER,
    rows_inserted  INTEGER NOT NULL DEFAULT 0,
    rows_updated   INTEGER NOT NULL DEFAULT 0,
    rows_unchanged INTEGER NOT NULL DEFAULT 0,
    rows_stale     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, file_id, idx)
);
CREATE INDEX {{prefix}}partitions_lease ON {{prefix}}partitions (lease_attempt) WHERE done = 0;
