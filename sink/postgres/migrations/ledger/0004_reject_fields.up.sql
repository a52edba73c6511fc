-- Every field of a bad row, kinds and nulls kept (see reader.RejectFields),
-- so that an export gives back exactly what the file said. Rejects stored
-- before this column have none; their export splits raw_row as before.
ALTER TABLE {{prefix}}rejects ADD COLUMN raw_fields TEXT;
