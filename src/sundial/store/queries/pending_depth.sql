-- Backlog by queue, priority and waiting state (pending = due and claimable now).
SELECT queue, priority, state, count(*)
FROM job_runs
WHERE state IN ('pending', 'scheduled', 'retry_wait', 'blocked')
GROUP BY queue, priority, state
ORDER BY queue, priority DESC, state
