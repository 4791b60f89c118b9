-- dispatch_key stops being a stored generated column. PostgreSQL recomputes stored generated
-- columns on every UPDATE of the row — claim, heartbeat, finish — which cost about 15% of
-- store throughput (bench/store_throughput.py). The key only matters while a run is
-- 'pending', and a run enters 'pending' only through statements that now write it from
-- sundial_dispatch_key(run_at, priority): insert_run, promote_due and replay. The paths that
-- keep run_at (reaper requeue, release of a blocked run) keep the key written at insert.
ALTER TABLE job_runs ALTER COLUMN dispatch_key DROP EXPRESSION;
ALTER TABLE job_runs ALTER COLUMN dispatch_key SET NOT NULL;
