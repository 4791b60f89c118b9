-- One run per (schedule, fire time), forever: this table outlives run retention.
INSERT INTO schedule_fires (schedule_id, fire_time, run_id)
VALUES (%(schedule_id)s, %(fire_time)s, coalesce(%(run_id)s, nextval(pg_get_serial_sequence('job_runs', 'id'))))
ON CONFLICT (schedule_id, fire_time) DO NOTHING
RETURNING run_id
