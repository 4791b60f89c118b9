-- The job a ScheduledJob describes, keyed by its uid. A newer generation overwrites an older
-- one; an older generation arriving late changes nothing.
INSERT INTO job_definitions (
    id, namespace, name, generation, handler, execution_model, queue, priority,
    timeout_seconds, max_retries, backoff_base_seconds, backoff_cap_seconds, dependency,
    quarantine_after, pod_template, failure_policy, successful_runs_history_limit,
    failed_runs_history_limit, start_timeout_seconds, oom_max_retries,
    oom_memory_increase_percent, oom_max_memory_bytes, pod_deletion_policy, max_lost_leases,
    concurrency_key, concurrency_limit, active)
VALUES (
    %(id)s, %(namespace)s, %(name)s, %(generation)s, %(handler)s, %(execution_model)s,
    %(queue)s, %(priority)s, %(timeout_seconds)s, %(max_retries)s, %(backoff_base_seconds)s,
    %(backoff_cap_seconds)s, %(dependency)s, %(quarantine_after)s, %(pod_template)s,
    %(failure_policy)s, %(successful_runs_history_limit)s, %(failed_runs_history_limit)s,
    %(start_timeout_seconds)s, %(oom_max_retries)s, %(oom_memory_increase_percent)s,
    %(oom_max_memory_bytes)s, %(pod_deletion_policy)s, %(max_lost_leases)s,
    %(concurrency_key)s, %(concurrency_limit)s, true)
ON CONFLICT (id) DO UPDATE
SET namespace = excluded.namespace,
    name = excluded.name,
    generation = excluded.generation,
    handler = excluded.handler,
    execution_model = excluded.execution_model,
    queue = excluded.queue,
    priority = excluded.priority,
    timeout_seconds = excluded.timeout_seconds,
    max_retries = excluded.max_retries,
    backoff_base_seconds = excluded.backoff_base_seconds,
    backoff_cap_seconds = excluded.backoff_cap_seconds,
    dependency = excluded.dependency,
    quarantine_after = excluded.quarantine_after,
    pod_template = excluded.pod_template,
    failure_policy = excluded.failure_policy,
    successful_runs_history_limit = excluded.successful_runs_history_limit,
    failed_runs_history_limit = excluded.failed_runs_history_limit,
    start_timeout_seconds = excluded.start_timeout_seconds,
    oom_max_retries = excluded.oom_max_retries,
    oom_memory_increase_percent = excluded.oom_memory_increase_percent,
    oom_max_memory_bytes = excluded.oom_max_memory_bytes,
    pod_deletion_policy = excluded.pod_deletion_policy,
    max_lost_leases = excluded.max_lost_leases,
    concurrency_key = excluded.concurrency_key,
    concurrency_limit = excluded.concurrency_limit,
    active = true,
    updated_at = now()
WHERE job_definitions.generation <= excluded.generation
RETURNING id
