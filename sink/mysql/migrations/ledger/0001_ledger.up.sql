-- The ledger's tables as they stand after the first 13 migrations of the
-- other databases, in one file: a new database has no history to replay.
-- The next file keeps their number, 14, which the ledger asks about.
--
-- Every statement here commits by itself (MariaDB and MySQL commit before
-- and after any DDL), so this file cannot share a transaction with the row
-- that records it: each statement is idempotent (IF NOT EXISTS), and a
-- process killed between the DDL and the version row runs the file again.
--
-- Text that is part of a key is VARCHAR, since TEXT cannot be a key, short
-- enough for InnoDB's 3,072-byte key limit in utf8mb4, and compared byte by
-- byte without padding (utf8mb4_nopad_bin): the default collations find 'a'
-- equal to 'A' and to 'a '. Keys that may be longer than that limit (a
-- path, a URL) are unique by their SHA-256, a stored generated column.
-- Times are Unix milliseconds by the database clock; planned and done stay
-- integers (0 or 1), as on the other databases.

-- Operations: one row per (target table, file ID), kept forever as identity
-- evidence.
CREATE TABLE IF NOT EXISTS {{prefix}}operations (
    table_name      VARCHAR(128) NOT NULL,
    file_id         VARCHAR(512) NOT NULL,
    file_key        BIGINT       NOT NULL,
    state           VARCHAR(16)  NOT NULL,
    content_digest  VARCHAR(128) NOT NULL,
    mapping_digest  VARCHAR(128) NOT NULL,
    mapping         MEDIUMTEXT   NOT NULL,
    file_path       TEXT         NOT NULL,
    file_size       BIGINT       NOT NULL,
    planned         INT          NOT NULL DEFAULT 0,
    lease_attempt   VARCHAR(64),
    lease_expires   BIGINT,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL,
    completed_at    BIGINT,
    completed_by    VARCHAR(64),
    outcome         MEDIUMTEXT,
    attempts        BIGINT       NOT NULL DEFAULT 0,
    rows_read       BIGINT       NOT NULL DEFAULT 0,
    rows_inserted   BIGINT       NOT NULL DEFAULT 0,
    rows_updated    BIGINT       NOT NULL DEFAULT 0,
    rows_unchanged  BIGINT       NOT NULL DEFAULT 0,
    rows_stale      BIGINT       NOT NULL DEFAULT 0,
    rows_superseded BIGINT       NOT NULL DEFAULT 0,
    rows_rejected   BIGINT       NOT NULL DEFAULT 0,
    scope_rows      BIGINT,
    PRIMARY KEY (table_name, file_id),
    CONSTRAINT operations_state_check
        CHECK (state IN ('processing', 'failed', 'completed', 'refused', 'undone', 'abandoned'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Attempts: one row per invocation that worked on an operation. trigger is
-- a reserved word here: it is quoted wherever it is named.
CREATE TABLE IF NOT EXISTS {{prefix}}attempts (
    attempt_id           VARCHAR(64)  NOT NULL PRIMARY KEY,
    table_name           VARCHAR(128) NOT NULL,
    file_id              VARCHAR(512) NOT NULL,
    "trigger"            VARCHAR(64)  NOT NULL,
    host                 VARCHAR(255) NOT NULL,
    pid                  BIGINT       NOT NULL,
    proc_start           BIGINT       NOT NULL DEFAULT 0,
    file_path            TEXT         NOT NULL,
    started_at           BIGINT       NOT NULL,
    heartbeat_at         BIGINT       NOT NULL,
    ended_at             BIGINT,
    outcome              VARCHAR(64),
    recovered_from       VARCHAR(64),
    error                TEXT,
    rows_read            BIGINT       NOT NULL DEFAULT 0,
    rows_inserted        BIGINT       NOT NULL DEFAULT 0,
    rows_updated         BIGINT       NOT NULL DEFAULT 0,
    rows_unchanged       BIGINT       NOT NULL DEFAULT 0,
    rows_stale           BIGINT       NOT NULL DEFAULT 0,
    rows_superseded      BIGINT       NOT NULL DEFAULT 0,
    rows_rejected        BIGINT       NOT NULL DEFAULT 0,
    rows_deleted         BIGINT       NOT NULL DEFAULT 0,
    partitions_committed BIGINT       NOT NULL DEFAULT 0,
    partitions_skipped   BIGINT       NOT NULL DEFAULT 0,
    recovered_leases     BIGINT       NOT NULL DEFAULT 0,
    schema_changes       TEXT,
    INDEX attempts_operation (table_name, file_id, started_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Rejects: bad rows within --max-rejects, under their original identity,
-- with the whole row as read (bounded) and every field, so that they can be
-- exported, fixed and replayed without the source file.
CREATE TABLE IF NOT EXISTS {{prefix}}rejects (
    table_name   VARCHAR(128) NOT NULL,
    file_id      VARCHAR(512) NOT NULL,
    ordinal      BIGINT       NOT NULL,
    byte_offset  BIGINT       NOT NULL,
    column_name  TEXT,
    raw_value    MEDIUMTEXT,
    raw_row      MEDIUMTEXT,
    raw_fields   MEDIUMTEXT,
    code         VARCHAR(64)  NOT NULL,
    message      TEXT         NOT NULL,
    attempt_id   VARCHAR(64)  NOT NULL,
    created_at   BIGINT       NOT NULL,
    replayed_by  VARCHAR(64),
    replayed_at  BIGINT,
    PRIMARY KEY (table_name, file_id, ordinal)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Files: the file ID behind each file key that target rows carry as lineage.
CREATE TABLE IF NOT EXISTS {{prefix}}files (
    file_key  BIGINT       NOT NULL PRIMARY KEY,
    file_id   VARCHAR(512) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- The quick check: what a file looked like on a host when it was hashed, so
-- an unchanged file is not hashed again; digest is of its bytes as stored,
-- content_digest of its decoded data. A path may be longer than a key can
-- be: (host, path) is unique by the path's SHA-256.
CREATE TABLE IF NOT EXISTS {{prefix}}quickcheck (
    host           VARCHAR(255) NOT NULL,
    path           TEXT         NOT NULL,
    path_hash      BINARY(32)   AS (UNHEX(SHA2(path, 256))) STORED,
    size           BIGINT       NOT NULL,
    mtime_ns       BIGINT       NOT NULL,
    ctime_ns       BIGINT       NOT NULL,
    inode          BIGINT       NOT NULL,
    device         BIGINT       NOT NULL,
    digest         VARCHAR(128) NOT NULL,
    content_digest VARCHAR(128),
    checked_at     BIGINT       NOT NULL,
    UNIQUE KEY quickcheck_path (host, path_hash),
    INDEX quickcheck_digest (digest),
    INDEX quickcheck_content (content_digest)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Past operations: earlier operations of a (table, file ID) that a new one
-- replaced, in their final state (superseded, undone, abandoned, replaced).
CREATE TABLE IF NOT EXISTS {{prefix}}operations_past (
    table_name      VARCHAR(128) NOT NULL,
    file_id         VARCHAR(512) NOT NULL,
    file_key        BIGINT       NOT NULL,
    state           VARCHAR(16)  NOT NULL,
    content_digest  VARCHAR(128) NOT NULL,
    mapping_digest  VARCHAR(128) NOT NULL,
    mapping         MEDIUMTEXT   NOT NULL,
    file_path       TEXT         NOT NULL,
    file_size       BIGINT       NOT NULL,
    created_at      BIGINT       NOT NULL,
    updated_at      BIGINT       NOT NULL,
    completed_at    BIGINT,
    completed_by    VARCHAR(64),
    outcome         MEDIUMTEXT,
    attempts        BIGINT       NOT NULL,
    rows_read       BIGINT       NOT NULL,
    rows_inserted   BIGINT       NOT NULL,
    rows_updated    BIGINT       NOT NULL,
    rows_unchanged  BIGINT       NOT NULL,
    rows_stale      BIGINT       NOT NULL,
    rows_superseded BIGINT       NOT NULL DEFAULT 0,
    rows_rejected   BIGINT       NOT NULL,
    replaced_at     BIGINT       NOT NULL,
    INDEX operations_past_key (table_name, file_id, created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- The transactional outbox: one row per event, written in the transaction
-- whose effect it announces, so an event exists exactly when its effect
-- committed. The payload is the JSON delivered, fixed when recorded.
CREATE TABLE IF NOT EXISTS {{prefix}}outbox (
    event_id    VARCHAR(128) NOT NULL PRIMARY KEY,
    kind        VARCHAR(64)  NOT NULL,
    table_name  VARCHAR(128) NOT NULL,
    file_id     VARCHAR(512) NOT NULL,
    attempt_id  VARCHAR(64)  NOT NULL,
    payload     MEDIUMTEXT   NOT NULL,
    created_at  BIGINT       NOT NULL,
    INDEX outbox_created (created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Deliveries: one row per (event, sink) the event is owed to, claimed with a
-- lease; the lease's holder (host, pid, process start) lets a run on the
-- same host take over at once from a process that died.
CREATE TABLE IF NOT EXISTS {{prefix}}outbox_deliveries (
    event_id          VARCHAR(128) NOT NULL,
    sink_id           VARCHAR(128) NOT NULL,
    sink_name         TEXT         NOT NULL,
    state             VARCHAR(16)  NOT NULL,
    tries             BIGINT       NOT NULL DEFAULT 0,
    last_error        TEXT,
    next_at           BIGINT       NOT NULL,
    lease_owner       VARCHAR(128),
    lease_expires     BIGINT,
    delivered_at      BIGINT,
    lease_host        VARCHAR(255),
    lease_pid         BIGINT,
    lease_proc_start  BIGINT,
    PRIMARY KEY (event_id, sink_id),
    INDEX outbox_deliveries_pending (state, next_at),
    CONSTRAINT outbox_deliveries_state_check CHECK (state IN ('pending', 'delivered', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Every snapshot applied to a (table, scope). A scope may be longer than a
-- key can be: (table, scope, file ID) is unique by the scope's SHA-256.
-- marked_at is the deletion mark a soft sweep set (Unix microseconds).
CREATE TABLE IF NOT EXISTS {{prefix}}snapshots (
    table_name  VARCHAR(128) NOT NULL,
    scope       TEXT         NOT NULL,
    scope_hash  BINARY(32)   AS (UNHEX(SHA2(scope, 256))) STORED,
    as_of       BIGINT       NOT NULL,
    file_id     VARCHAR(512) NOT NULL,
    applied_at  BIGINT       NOT NULL,
    marked_at   BIGINT,
    UNIQUE KEY snapshots_scope (table_name, scope_hash, file_id),
    INDEX snapshots_file (table_name, file_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- The remote quick check: what a remote object (an s3:// or http(s):// URL,
-- credentials masked) looked like when it was hashed. A URL may be longer
-- than a key can be: it is unique by its SHA-256.
CREATE TABLE IF NOT EXISTS {{prefix}}remote (
    url            TEXT         NOT NULL,
    url_hash       BINARY(32)   AS (UNHEX(SHA2(url, 256))) STORED,
    etag           TEXT         NOT NULL,
    version_id     TEXT         NOT NULL,
    size           BIGINT       NOT NULL,
    digest         VARCHAR(128) NOT NULL,
    content_digest VARCHAR(128) NOT NULL,
    checked_at     BIGINT       NOT NULL,
    UNIQUE KEY remote_url (url_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
