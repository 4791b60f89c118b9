-- Cancel runs the hot queue's Redis holds: the record has them pending while their attempts
-- run, so they are asked to stop as running runs are (cancel.sql's flag and reason), not ended
-- under them: the heartbeat returns the flag, the attempt's finish records it cancelled, and
-- until then each run keeps its place under concurrency keys and quotas, as a running run does.
UPDATE job_runs
SET cancel_requested = true,
    cancel_reason = %(reason)s
WHERE id = ANY(%(ids)s::bigint[])
  AND state = 'pending'
RETURNING id
