-- Due runs of concurrency keys join the dispatch index while their key has room: a key's runs
-- pending or running never outnumber the limit the waiting run's job gives (migration 0280,
-- docs/adr/0064-concurrency-keys.md). Oldest first within a key. A run whose job no longer
-- names a key (the ScheduledJob changed) goes at once.
--
-- Run after promote_keyed_lock.sql in the same transaction: two promoters (the maintainer
-- and a runner's maintenance) would each see the same room. A promoted run ages from its
-- promotion, as a released one does: time spent waiting for its key must not let it jump
-- ahead of higher priorities.
WITH due AS (
    SELECT r.id, r.namespace, r.concurrency_key, j.concurrency_limit,
           row_number() OVER (PARTITION BY r.namespace, r.concurrency_key
                              ORDER BY r.run_at, r.id) AS place
    FROM job_runs r
    JOIN job_definitions j ON j.id = r.job_id
    WHERE r.state IN ('scheduled', 'retry_wait')
      AND r.concurrency_key IS NOT NULL
      AND r.run_at <= now()
),
held AS (
    SELECT a.namespace, a.concurrency_key, count(*) AS runs
    FROM job_runs a
    WHERE a.concurrency_key IS NOT NULL
      AND a.state IN ('pending', 'running')
      AND (a.namespace, a.concurrency_key) IN (SELECT namespace, concurrency_key FROM due)
    GROUP BY a.namespace, a.concurrency_key
),
promoted AS (
    SELECT d.id
    FROM due d
    LEFT JOIN held h
        ON h.namespace IS NOT DISTINCT FROM d.namespace AND h.concurrency_key = d.concurrency_key
    WHERE d.concurrency_limit IS NULL
       OR d.place <= d.concurrency_limit - coalesce(h.runs, 0)
    ORDER BY d.id
    LIMIT %(limit)s
)
UPDATE job_runs r
SET state = 'pending',
    dispatch_key = sundial_dispatch_key(greatest(r.run_at, now()), r.priority)
WHERE r.id = ANY(ARRAY(SELECT id FROM promoted))
  AND r.state IN ('scheduled', 'retry_wait')
RETURNING r.id
