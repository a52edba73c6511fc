-- The quick check remembers both digests of a file: digest, of its bytes as
-- stored, and content_digest, of its decoded data (its identity). Rows
-- written before this column have none: a compressed file is hashed again.
ALTER TABLE {{prefix}}quickcheck ADD COLUMN content_digest TEXT;
-- The same stored bytes always decode to the same data: a file whose stored
-- digest is known need not be decompressed to learn its content digest.
CREATE INDEX quickcheck_digest ON {{prefix}}quickcheck (digest);
CREATE INDEX quickcheck_content ON {{prefix}}quickcheck (content_digest);
