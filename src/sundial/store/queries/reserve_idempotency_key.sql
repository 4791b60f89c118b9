-- Reserve the key and the run id together; a concurrent submit with the same key waits on the
-- unique index and then gets no row back.
INSERT INTO idempotency_keys (key, args_hash, run_id)
VALUES (%(key)s, %(args_hash)s, nextval(pg_get_serial_sequence('job_runs', 'id')))
ON CONFLICT (key) DO NOTHING
RETURNING run_id
