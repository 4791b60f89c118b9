-- Many runs of one job in one statement (runs.submit_many). Run ids are drawn first, in the
-- order given: runs of one batch share their dispatch key and the id breaks the tie, so the
-- batch runs first in, first out. Keys are then reserved in key order (so two batches sharing
-- keys wait on each other instead of deadlocking); a key that is already taken gets no run
-- here (its drawn id is left unused), and the caller looks it up in a second statement, which
-- sees rows committed after this statement's snapshot.
WITH job AS (
    SELECT id, namespace, queue, handler, execution_model, priority, timeout_seconds,
           max_retries, backoff_base_seconds, backoff_cap_seconds, oom_max_retries,
           max_lost_leases, concurrency_key
    FROM job_definitions
    WHERE active
      AND (id = %(job_id)s::uuid OR (namespace = %(namespace)s AND name = %(name)s))
    LIMIT 1
),
item AS (
    SELECT *
    FROM unnest(%(ordinals)s::int[], %(keys)s::text[], %(args_hashes)s::text[],
                %(args)s::text[], %(priorities)s::smallint[], %(run_ats)s::timestamptz[],
                %(delays)s::double precision[], %(queues)s::text[])
         AS i(ordinal, key, args_hash, args, priority, run_at, delay_seconds, queue)
),
ids AS MATERIALIZED (
    SELECT ordinal, nextval(pg_get_serial_sequence('job_runs', 'id')) AS run_id
    FROM (SELECT ordinal FROM item WHERE EXISTS (SELECT 1 FROM job) ORDER BY ordinal) o
),
reserved AS (
    INSERT INTO idempotency_keys (key, args_hash, run_id)
    SELECT i.key, i.args_hash, d.run_id
    FROM item i JOIN ids d ON d.ordinal = i.ordinal
    WHERE i.key IS NOT NULL
    ORDER BY i.key
    ON CONFLICT (key) DO NOTHING
    RETURNING key, run_id
),
numbered AS MATERIALIZED (
    SELECT i.ordinal, i.key, i.args::jsonb AS args, i.priority, i.queue, d.run_id,
           coalesce(i.run_at, now() + make_interval(secs => i.delay_seconds)) AS run_at
    FROM item i
    JOIN ids d ON d.ordinal = i.ordinal
    LEFT JOIN reserved r ON r.key = i.key
    WHERE i.key IS NULL OR r.key IS NOT NULL
),
inserted AS (
    INSERT INTO job_runs (
        id, job_id, idempotency_key, queue, handler, execution_model,
        timeout_seconds, max_retries, backoff_base_seconds, backoff_cap_seconds, oom_max_retries,
        max_lost_leases, state, priority, run_at, dispatch_key, args, pending_dependencies,
        namespace, concurrency_key)
    SELECT n.run_id, job.id, n.key, coalesce(n.queue, job.queue), job.handler, job.execution_model,
           job.timeout_seconds, job.max_retries, job.backoff_base_seconds,
           job.backoff_cap_seconds, job.oom_max_retries, job.max_lost_leases,
           CASE WHEN n.run_at > now() OR job.concurrency_key IS NOT NULL THEN 'scheduled'
                ELSE 'pending' END,
           coalesce(n.priority, job.priority), n.run_at,
           sundial_dispatch_key(n.run_at, coalesce(n.priority, job.priority)::smallint),
           n.args, 0, job.namespace, job.concurrency_key
    FROM numbered n CROSS JOIN job
    RETURNING id, state
)
SELECT n.ordinal, i.id, i.state
FROM numbered n JOIN inserted i ON i.id = n.run_id
UNION ALL
SELECT -1, NULL, NULL WHERE NOT EXISTS (SELECT 1 FROM job)
