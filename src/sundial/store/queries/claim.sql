-- Claim up to %(limit)s due runs in one statement. SKIP LOCKED lets many workers poll without
-- blocking each other; dispatch_key orders by priority with aging (see 0002_runs.sql).
--
-- Fair share between namespaces (migration 0210, docs/adr/0049-fair-share-between-namespaces.md):
-- the claim deals its slots round-robin over the namespaces that have pending runs, each
-- namespace's runs taken from its own head in dispatch order, so priority orders runs within a
-- namespace and a namespace flooding at the top priority cannot hold another's back. With
-- more namespaces than slots, which ones get the first slots is random, so over claims each
-- gets its share. Slots a namespace cannot fill (it has fewer due runs, or none this claimer
-- may take) go to the namespaces that filled theirs, in dispatch order, runs of no namespace
-- (written by an older version) among them.
--
-- Every walk reads one (namespace, queue) range of the pending index (migration 0340), for
-- each queue the claimer serves: the cost of a claim does not grow with the backlog of queues
-- or namespaces it does not serve, and the global dispatch index is not read at all.
--
-- The picked ids go to the UPDATE as an array (id = ANY(ARRAY(...))), not as a CTE joined on
-- id: with a join the planner estimates the CTE at %(limit)s rows and hashes the whole hot
-- table (a sequential scan of every live and recently finished run, per claim: about half
-- of a 500-run claim's time at 20,000 rows). The array form is a primary-key probe per picked
-- run, whatever the table's size (docs/adr/0012-runner-hot-path.md).
--
-- Weights (%(weight_namespaces)s, %(weights)s; a namespace not named weighs 1): a namespace of
-- weight w offers ceil(limit * w / total) runs and its k-th run ranks (k - u) / w for a random
-- u in (0, 1], so over claims it gets w shares to another's one; with equal weights the ranks
-- are the plain rounds, in random order within a round.
--
-- Runs the claimer holds (%(held_namespaces)s, %(held)s: per namespace, the runs it runs now)
-- count as rounds a namespace has had already: its k-th run ranks (held + k - u) / w. A
-- namespace the claimer runs nothing of takes the first freed slot from one that fills the
-- rest, instead of drawing lots for it (one slot freed at a time: half the draws lost, beside
-- one flooding namespace).
--
-- Reserved slots (%(reserved)s, 0: none): the last of a claim's slots take only runs of a
-- namespace that would still hold no more than the one the claimer holds most of (for their
-- weights), so a runner busy with one namespace's flood keeps a slot free for a quieter
-- namespace's next run, which starts at once instead of waiting for a slot to free
-- (docs/adr/0049-fair-share-between-namespaces.md). The most held never takes them: with one
-- namespace busy they stay free; with several, the one behind takes them.
--
-- %(namespaces)s (NULL: all) keeps a runner to the namespaces it serves (migration 0200);
-- %(excluded)s (NULL: none) leaves out namespaces the claimer has no room for now (the pod
-- launcher's Pod limit per namespace).
--
-- A run whose execution_model is NULL takes its model from the handler's registration
-- (migration 0080): %(unset_model)s says the claimer registers the named handlers under the
-- models it asks for, so it may take such runs (a runner does; the pod launcher does not).
WITH RECURSIVE spaces AS (
    -- Every namespace with pending runs, one index probe each (a loose index scan). It walks
    -- from the end of each namespace's range, its newest runs: claims take runs from the
    -- front, whose index entries stay (dead) until a vacuum, and a probe from the front
    -- stepped over every one of them, each claim.
    (SELECT namespace FROM job_runs
     WHERE state = 'pending' AND namespace IS NOT NULL
     ORDER BY namespace DESC, queue DESC, dispatch_key DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT r.namespace FROM job_runs r
            WHERE r.state = 'pending' AND r.namespace < s.namespace
            ORDER BY r.namespace DESC, r.queue DESC, r.dispatch_key DESC LIMIT 1)
    FROM spaces s
    WHERE s.namespace IS NOT NULL
),
named AS (
    -- A claimer that serves some namespaces names them; the walk above runs only for one that
    -- serves them all.
    SELECT unnest(%(namespaces)s::text[]) AS namespace
    WHERE %(namespaces)s::text[] IS NOT NULL
    UNION ALL
    SELECT namespace FROM spaces
    WHERE namespace IS NOT NULL AND %(namespaces)s::text[] IS NULL
),
served AS (
    SELECT n.namespace, f.floor, coalesce(w.weight, 1) AS weight, coalesce(h.held, 0) AS held
    FROM named n
    LEFT JOIN unnest(%(floor_namespaces)s::text[], %(floor_keys)s::double precision[])
        AS f(namespace, floor) ON f.namespace = n.namespace
    LEFT JOIN unnest(%(weight_namespaces)s::text[], %(weights)s::double precision[])
        AS w(namespace, weight) ON w.namespace = n.namespace
    LEFT JOIN unnest(%(held_namespaces)s::text[], %(held)s::int[])
        AS h(namespace, held) ON h.namespace = n.namespace
    WHERE %(excluded)s::text[] IS NULL OR n.namespace <> ALL(%(excluded)s::text[])
),
share AS (
    SELECT ceil(%(limit)s * s.weight / (SELECT sum(weight) FROM served))::int AS runs,
           s.namespace, s.floor, s.weight, s.held
    FROM served s
),
dealt AS (
    SELECT picked.id, picked.namespace, picked.dispatch_key, s.weight, s.held
    FROM share s
    CROSS JOIN LATERAL (
        -- Each queue this claimer serves walked on its own: a quiet queue's claim never steps
        -- over another queue's backlog in the same namespace (migration 0340). With several
        -- queues, each walk may lock up to the namespace's share; those the share leaves out
        -- stay pending (locked until this claim commits).
        SELECT in_queue.id, in_queue.namespace, in_queue.dispatch_key
        FROM unnest(%(queues)s::text[]) AS q(queue)
        CROSS JOIN LATERAL (
            -- A range, not "=": ordered by (namespace, queue, dispatch_key), only the queue
            -- index serves it in order, so this never walks the global dispatch index past
            -- another namespace's or another queue's runs to find these.
            SELECT id, namespace, dispatch_key FROM job_runs
            WHERE state = 'pending'
              AND (namespace, queue, dispatch_key)
                  >= (s.namespace, q.queue, coalesce(s.floor, '-Infinity'::double precision))
              AND (namespace, queue) <= (s.namespace, q.queue)
              AND run_at <= now()
              AND (%(handlers)s::text[] IS NULL OR handler = ANY(%(handlers)s::text[]))
              AND (%(execution_models)s::text[] IS NULL
                   OR execution_model = ANY(%(execution_models)s::text[])
                   OR (execution_model IS NULL AND %(unset_model)s::boolean))
            ORDER BY namespace, queue, dispatch_key
            LIMIT s.runs
            FOR UPDATE SKIP LOCKED
        ) in_queue
        ORDER BY in_queue.dispatch_key
        LIMIT s.runs
    ) picked
),
most AS (
    -- The share of the namespace the claimer holds most of, for its weight (0: none held).
    SELECT coalesce(max(h.held / coalesce(w.weight, 1)), 0) AS share
    FROM unnest(%(held_namespaces)s::text[], %(held)s::int[]) AS h(namespace, held)
    LEFT JOIN unnest(%(weight_namespaces)s::text[], %(weights)s::double precision[])
        AS w(namespace, weight) ON w.namespace = h.namespace
),
fair AS (
    -- Round by round: every namespace's first run, then every second run, ... (a round of
    -- a namespace of weight w lasts 1 / w), the rounds of the runs held counted first. The
    -- last %(reserved)s slots take only runs of a namespace behind the one held most (behind):
    -- the others keep to %(limit)s - %(reserved)s.
    SELECT id, behind FROM (
        SELECT id, rank, behind,
               count(*) FILTER (WHERE NOT behind)
                   OVER (ORDER BY rank ROWS UNBOUNDED PRECEDING) AS kept
        FROM (
            SELECT id, (held + round) / weight <= (SELECT share FROM most) AS behind,
                   (held + round - (1 - random())) / weight AS rank
            FROM (
                SELECT id, weight, held,
                       row_number() OVER (PARTITION BY namespace ORDER BY dispatch_key) AS round
                FROM dealt
            ) numbered
        ) ranked
    ) counted
    WHERE behind OR kept <= %(limit)s - %(reserved)s
    ORDER BY rank
    LIMIT %(limit)s
),
room AS (
    -- The slots left for the namespaces that filled their share, the reserved ones kept.
    SELECT greatest(0, least(%(limit)s - count(*),
                             %(limit)s - %(reserved)s - count(*) FILTER (WHERE NOT behind)
                    ))::int AS runs
    FROM fair
),
filled AS (
    -- Only a namespace that filled its share can have more runs for the slots left over.
    SELECT s.namespace, s.floor
    FROM share s
    JOIN (SELECT namespace, count(*) AS runs FROM dealt GROUP BY namespace) d
        ON d.namespace = s.namespace
    WHERE d.runs >= s.runs
),
rest AS (
    SELECT id FROM (
        SELECT more.id, more.dispatch_key
        FROM filled f
        CROSS JOIN unnest(%(queues)s::text[]) AS q(queue)
        CROSS JOIN LATERAL (
            SELECT id, dispatch_key FROM job_runs
            WHERE state = 'pending'
              AND (namespace, queue, dispatch_key)
                  >= (f.namespace, q.queue, coalesce(f.floor, '-Infinity'::double precision))
              AND (namespace, queue) <= (f.namespace, q.queue)
              AND run_at <= now()
              AND (%(handlers)s::text[] IS NULL OR handler = ANY(%(handlers)s::text[]))
              AND (%(execution_models)s::text[] IS NULL
                   OR execution_model = ANY(%(execution_models)s::text[])
                   OR (execution_model IS NULL AND %(unset_model)s::boolean))
              AND id <> ALL(ARRAY(SELECT id FROM dealt))
            ORDER BY namespace, queue, dispatch_key
            LIMIT (SELECT runs FROM room)
            FOR UPDATE SKIP LOCKED
        ) more
        UNION ALL
        -- Runs of no namespace (written by an older version), for a claimer that serves
        -- every namespace.
        SELECT legacy.id, legacy.dispatch_key
        FROM unnest(%(queues)s::text[]) AS q(queue)
        CROSS JOIN LATERAL (
            SELECT id, dispatch_key FROM job_runs
            WHERE state = 'pending'
              AND namespace IS NULL
              AND queue = q.queue
              AND run_at <= now()
              AND (%(handlers)s::text[] IS NULL OR handler = ANY(%(handlers)s::text[]))
              AND (%(execution_models)s::text[] IS NULL
                   OR execution_model = ANY(%(execution_models)s::text[])
                   OR (execution_model IS NULL AND %(unset_model)s::boolean))
            ORDER BY namespace, queue, dispatch_key
            LIMIT (SELECT runs FROM room)
            FOR UPDATE SKIP LOCKED
        ) legacy
        WHERE %(namespaces)s::text[] IS NULL
    ) leftover
    ORDER BY dispatch_key
    LIMIT (SELECT runs FROM room)
),
claimed AS (
UPDATE job_runs r
SET state = 'running',
    lease_owner = %(worker)s,
    lease_until = now() + make_interval(secs => %(lease_seconds)s::double precision),
    attempt = r.attempt + 1,
    started_at = now(),
    unclaimable_reason = NULL
WHERE r.id = ANY(ARRAY(SELECT id FROM fair UNION ALL SELECT id FROM rest))
RETURNING r.id, r.attempt, r.job_id, r.queue, r.handler, r.execution_model, r.args,
          r.timeout_seconds, r.schedule_id, r.fire_time,
          coalesce(r.idempotency_key, 'run:' || r.id) AS idempotency_key, r.lease_until,
          r.priority, r.run_at, r.max_retries, r.retries_used, r.backoff_base_seconds,
          r.backoff_cap_seconds, r.cancel_requested, r.namespace, r.dispatch_key,
          coalesce(r.hot_epoch, 0) AS epoch
)
-- Handed back in claim order (the probe above returns them in id order), each with its job's
-- spec.dependency: the circuit-breaker key the runner uses before the handler's registered one
-- (one primary-key probe of job_definitions per run).
SELECT c.id, c.attempt, c.job_id, c.queue, c.handler, c.execution_model, c.args,
       c.timeout_seconds, c.schedule_id, c.fire_time, c.idempotency_key, c.lease_until,
       c.priority, c.run_at, c.max_retries, c.retries_used, c.backoff_base_seconds,
       c.backoff_cap_seconds, c.cancel_requested, c.namespace,
       (SELECT j.dependency FROM job_definitions j WHERE j.id = c.job_id) AS dependency,
       c.epoch
FROM claimed c
ORDER BY c.dispatch_key, c.id
