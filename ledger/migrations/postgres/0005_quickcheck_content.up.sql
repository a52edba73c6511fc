-- The quick check remembers both digests of a file: digest, of its bytes as
-- stored, and content_digest, of its decoded data (its identity). Rows
-- written before this column have none: a compressed file is hashed again.
ALTER TABLE {{prefix}}quickcheck ADD COLUMN content_digest TEXT;
