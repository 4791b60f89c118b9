-- Current definition; last changed by migrations/0060_oom_budget_and_pod_policy.sql.
CREATE OR REPLACE FUNCTION sundial_next_state(
    failure_class text, retryable boolean, counts boolean, terminal_state text,
    retries_used integer, max_retries integer, infra_retries_used integer, infra_limit integer,
    oom_retries_used integer, oom_max_retries integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN failure_class IS NULL THEN 'completed'
        WHEN NOT retryable THEN terminal_state
        WHEN failure_class = 'oom'
            THEN CASE WHEN oom_retries_used >= oom_max_retries THEN 'dead_lettered'
                      ELSE 'retry_wait' END
        WHEN (counts AND retries_used >= max_retries)
             OR (NOT counts AND infra_retries_used >= infra_limit)
            THEN CASE WHEN terminal_state = 'timed_out' THEN 'timed_out' ELSE 'dead_lettered' END
        ELSE 'retry_wait'
    END
$$;
