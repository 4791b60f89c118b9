-- For each given unfinished run whose job's `dependency` names a circuit open or half-open on a
-- live runner, that circuit (as circuits_open.sql counts it): why `sundial runs` says a run
-- waits. Finished runs, and runs of jobs without a dependency, are not returned.
SELECT jr.id,
       c.dependency,
       count(*) FILTER (WHERE c.state = 'open') AS open,
       count(*) FILTER (WHERE c.state = 'half_open') AS half_open,
       count(*) AS runners,
       min(c.since) FILTER (WHERE c.state <> 'closed') AS since,
       array_agg(c.worker_id ORDER BY c.worker_id) FILTER (WHERE c.state <> 'closed') AS workers
FROM job_runs jr
JOIN job_definitions j ON j.id = jr.job_id
JOIN circuits c ON c.dependency = j.dependency
JOIN runners r ON r.worker_id = c.worker_id AND r.expires_at > now()
WHERE jr.id = ANY(%(run_ids)s::bigint[]) AND jr.finished_at IS NULL
GROUP BY jr.id, c.dependency
HAVING count(*) FILTER (WHERE c.state <> 'closed') > 0
