-- Hand running attempts back without spending a retry: a runner draining on SIGTERM, a run
-- whose circuit breaker is open, a run whose process pool was restarted under it. Fenced like
-- finish: only where (id, attempt) and the lease owner still match and the run still runs.
-- With no delay the run is pending again at once and keeps its dispatch_key (its place in
-- line); with a delay it waits in retry_wait until promote_due. attempt is not reset: the
-- fencing token only grows, so the released attempt's late writes stay fenced out.
-- The statement and its plan notes are in schema/functions/sundial_release.sql.
SELECT run_id, state
FROM sundial_release(%(worker)s, %(ids)s::bigint[], %(attempts)s::int[],
                     %(delays)s::double precision[], %(reasons)s::text[])
