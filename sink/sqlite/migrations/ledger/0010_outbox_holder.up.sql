-- The process that holds a delivery's lease: its host, pid and process
-- start, so that a run on the same host can take over at once the
-- deliveries of a process that has died, instead of waiting for the lease.
ALTER TABLE {{prefix}}outbox_deliveries ADD COLUMN lease_host TEXT;
ALTER TABLE {{prefix}}outbox_deliveries ADD COLUMN lease_pid INTEGER;
ALTER TABLE {{prefix}}outbox_deliveries ADD COLUMN lease_proc_start INTEGER;
