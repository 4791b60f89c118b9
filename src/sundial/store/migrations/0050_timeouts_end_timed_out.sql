-- A run whose attempts kept timing out ends 'timed_out', not 'dead_lettered' (the failure
-- table in docs/failure-modes.md: "Pod exceeds its deadline -> TIMED_OUT"; ADR 0001, decision 7, amended). A timeout
-- is still retried with backoff while maxRetries lasts; only the state at the end changes.
-- Every other retried class still ends 'dead_lettered' once its budget is spent (poison runs).
--
-- The caller passes each failure class's terminal_state (sundial.scheduling.failures.RULES);
-- for a retried class it is the state once the budget is spent. Runners from before this
-- migration send 'failed' for retried classes other than timeout, so any value but
-- 'timed_out' reads as 'dead_lettered' here: a retried class never ends plain 'failed'.
-- Unchanged from 0002 otherwise; sundial_finish (0004) calls it.
CREATE OR REPLACE FUNCTION sundial_next_state(
    failure_class text, retryable boolean, counts boolean, terminal_state text,
    retries_used integer, max_retries integer, infra_retries_used integer, infra_limit integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN failure_class IS NULL THEN 'completed'
        WHEN NOT retryable THEN terminal_state
        WHEN (counts AND retries_used >= max_retries)
             OR (NOT counts AND infra_retries_used >= infra_limit)
            THEN CASE WHEN terminal_state = 'timed_out' THEN 'timed_out' ELSE 'dead_lettered' END
        ELSE 'retry_wait'
    END
$$;
