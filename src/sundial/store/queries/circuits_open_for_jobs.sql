-- For each given job whose `dependency` names a circuit open or half-open on a live runner, that
-- circuit (as circuits_open.sql counts it). Jobs without a dependency, or whose circuit is
-- closed everywhere, are not returned.
SELECT j.id,
       c.dependency,
       count(*) FILTER (WHERE c.state = 'open') AS open,
       count(*) FILTER (WHERE c.state = 'half_open') AS half_open,
       count(*) AS runners,
       min(c.since) FILTER (WHERE c.state <> 'closed') AS since,
       array_agg(c.worker_id ORDER BY c.worker_id) FILTER (WHERE c.state <> 'closed') AS workers
FROM job_definitions j
JOIN circuits c ON c.dependency = j.dependency
JOIN runners r ON r.worker_id = c.worker_id AND r.expires_at > now()
WHERE j.id = ANY(%(job_ids)s::uuid[])
GROUP BY j.id, c.dependency
HAVING count(*) FILTER (WHERE c.state <> 'closed') > 0
