-- Plans: the stored plan of an operation, reused by every later attempt.
-- The columns are those of the SQLite migration, so that one spelling of the
-- checkpoint statements serves both; done stays an integer (0 or 1), so
-- that sum(done) counts done partitions on both.
CREATE TABLE {{prefix}}plans (
    table_name  text    NOT NULL,
    file_id     text    NOT NULL,
    body        text    NOT NULL,
    row_count   bigint  NOT NULL,
    partitions  bigint  NOT NULL,
    attempt_id  text    NOT NULL,
    created_at  bigint  NOT NULL,
    PRIMARY KEY (table_name, file_id)
);

-- Partitions: boundaries, claims and completion marks. A partition is done
-- exactly when its effects committed: both are written in one transaction.
CREATE TABLE {{prefix}}partitions (
    table_name     text    NOT NULL,
    file_id        text    NOT NULL,
    idx            integer NOT NULL,
    first_row      bigint  NOT NULL,
    row_count      bigint  NOT NULL,
    rejected       bigint  NOT NULL,
    byte_offset    bigint  NOT NULL,
    byte_length    bigint  NOT NULL,
    crc            bigint  NOT NULL,
    done           integer NOT NULL DEFAULT 0,
    lease_attempt  text,
    lease_expires  bigint,
    done_by        text,
    done_at        bigint,
    rows_inserted  bigint  NOT NULL DEFAULT 0,
    rows_updated   bigint  NOT NULL DEFAULT 0,
    rows_unchanged bigint  NOT NULL DEFAULT 0,
    rows_stale     bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, file_id, idx)
);
-- Index names cannot be schema-qualified: an index lives in its table's schema.
CREATE INDEX partitions_lease ON {{prefix}}partitions (lease_attempt) WHERE done = 0;
