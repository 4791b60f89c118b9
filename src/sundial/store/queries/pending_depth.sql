-- Backlog by queue, priority and waiting state (pending = due and claimable now). `held`: the
-- runs the hot queue's Redis holds (pending in the record while they run), left out.
SELECT queue, priority, state, count(*)
FROM job_runs
WHERE state IN ('pending', 'scheduled', 'retry_wait', 'blocked')
  AND (%(held)s::bigint[] IS NULL OR state <> 'pending' OR NOT id = ANY(%(held)s::bigint[]))
GROUP BY queue, priority, state
ORDER BY queue, priority DESC, state
