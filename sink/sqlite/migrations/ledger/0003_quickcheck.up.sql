-- The quick check: what a file looked like on a host when it was hashed, so
-- an unchanged file is not hashed again.
CREATE TABLE {{prefix}}quickcheck (
    host       TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    mtime_ns   INTEGER NOT NULL,
    ctime_ns   INTEGER NOT NULL,
    inode      INTEGER NOT NULL,
    device     INTEGER NOT NULL,
    digest     TEXT    NOT NULL,
    checked_at INTEGER NOT NULL,
    PRIMARY KEY (host, path)
);
