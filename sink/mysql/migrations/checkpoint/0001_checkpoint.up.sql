-- The checkpoints' tables as they stand after the migrations of the other
-- databases, in one file: a new database has no history to replay.
--
-- Every statement here commits by itself (MariaDB and MySQL commit before
-- and after any DDL), so this file cannot share a transaction with the row
-- that records it: each statement is idempotent (IF NOT EXISTS), and a
-- process killed between the DDL and the version row runs the file again.
--
-- Text that is part of a key is VARCHAR, since TEXT cannot be a key, short
-- enough for InnoDB's 3,072-byte key limit in utf8mb4, and compared byte by
-- byte without padding (utf8mb4_nopad_bin): the default collations find 'a'
-- equal to 'A' and to 'a '.

-- Plans: the stored plan of an operation, reused by every later attempt.
CREATE TABLE IF NOT EXISTS {{prefix}}plans (
    table_name  VARCHAR(128) NOT NULL,
    file_id     VARCHAR(512) NOT NULL,
    body        LONGTEXT     NOT NULL,
    row_count   BIGINT       NOT NULL,
    partitions  BIGINT       NOT NULL,
    attempt_id  VARCHAR(64)  NOT NULL,
    created_at  BIGINT       NOT NULL,
    PRIMARY KEY (table_name, file_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Partitions: boundaries, claims and completion marks. A partition is done
-- exactly when its effects committed: both are written in one transaction.
-- superseded_rows holds the ordinals of the partition's rows that a later
-- row of the same file supersedes (differences from first_row, as unsigned
-- varints; NULL when there are none).
CREATE TABLE IF NOT EXISTS {{prefix}}partitions (
    table_name      VARCHAR(128) NOT NULL,
    file_id         VARCHAR(512) NOT NULL,
    idx             INT          NOT NULL,
    first_row       BIGINT       NOT NULL,
    row_count       BIGINT       NOT NULL,
    rejected        BIGINT       NOT NULL,
    byte_offset     BIGINT       NOT NULL,
    byte_length     BIGINT       NOT NULL,
    crc             BIGINT       NOT NULL,
    done            INT          NOT NULL DEFAULT 0,
    lease_attempt   VARCHAR(64),
    lease_expires   BIGINT,
    done_by         VARCHAR(64),
    done_at         BIGINT,
    rows_inserted   BIGINT       NOT NULL DEFAULT 0,
    rows_updated    BIGINT       NOT NULL DEFAULT 0,
    rows_unchanged  BIGINT       NOT NULL DEFAULT 0,
    rows_stale      BIGINT       NOT NULL DEFAULT 0,
    superseded      BIGINT       NOT NULL DEFAULT 0,
    superseded_rows LONGBLOB,
    PRIMARY KEY (table_name, file_id, idx),
    INDEX partitions_lease (lease_attempt)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
