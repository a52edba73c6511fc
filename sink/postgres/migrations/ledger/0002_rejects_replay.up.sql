-- The whole bad row as read (bounded), so rejects can be exported, fixed
-- and replayed without the source file; and which replay applied it.
ALTER TABLE {{prefix}}rejects ADD COLUMN raw_row TEXT;
ALTER TABLE {{prefix}}rejects ADD COLUMN replayed_by TEXT;
ALTER TABLE {{prefix}}rejects ADD COLUMN replayed_at BIGINT;
