-- The quick check: what a file looked like on a host when it was hashed, so
-- an unchanged file is not hashed again.
CREATE TABLE {{prefix}}quickcheck (
    host       TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    size       BIGINT  NOT NULL,
    mtime_ns   BIGINT  NOT NULL,
    ctime_ns   BIGINT  NOT NULL,
    inode      BIGINT  NOT NULL,
    device     BIGINT  NOT NULL,
    digest     TEXT    NOT NULL,
    checked_at BIGINT  NOT NULL,
    PRIMARY KEY (host, path)
);
