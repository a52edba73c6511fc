-- The remote quick check: what a remote object (an s3:// or http(s):// URL,
-- credentials masked) looked like when it was hashed, so rerunning an object
-- already imported costs one HEAD request, not a download. The ETag alone is
-- not the identity (it is no MD5 for multipart or KMS-encrypted objects);
-- the digests are, as for local files.
CREATE TABLE {{prefix}}remote (
    url            TEXT    NOT NULL,
    etag           TEXT    NOT NULL,
    version_id     TEXT    NOT NULL,
    size           INTEGER  NOT NULL,
    digest         TEXT    NOT NULL,
    content_digest TEXT    NOT NULL,
    checked_at     INTEGER  NOT NULL,
    PRIMARY KEY (url)
);
