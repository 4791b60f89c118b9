-- The dependencies whose circuit is open or half-open on at least one live runner (store.circuits,
-- migration 0150), optionally only some of them. A runner is live while its announcement has
-- not expired (runners, 0082); the rows of the others do not count. `runners` counts the live
-- runners that have called the dependency at all, whatever their breaker's state.
SELECT c.dependency,
       count(*) FILTER (WHERE c.state = 'open') AS open,
       count(*) FILTER (WHERE c.state = 'half_open') AS half_open,
       count(*) AS runners,
       min(c.since) FILTER (WHERE c.state <> 'closed') AS since,
       array_agg(c.worker_id ORDER BY c.worker_id) FILTER (WHERE c.state <> 'closed') AS workers
FROM circuits c
JOIN runners r ON r.worker_id = c.worker_id AND r.expires_at > now()
WHERE %(dependencies)s::text[] IS NULL OR c.dependency = ANY(%(dependencies)s::text[])
GROUP BY c.dependency
HAVING count(*) FILTER (WHERE c.state <> 'closed') > 0
ORDER BY c.dependency
