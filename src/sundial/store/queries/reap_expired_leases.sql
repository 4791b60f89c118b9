-- Runs whose lease ran out: back to pending (the next claim increments attempt), or ended when
-- a cancel was requested or the run has lost its lease more than max_lost_leases times since
-- it was submitted or replayed. Database
-- time decides what expired.
--
-- A lost lease spends the lost-lease budget, never maxRetries: the runner (or pod launcher)
-- died or stalled, which says nothing about whether the job works, so a maxRetries: 0 run is
-- still executed again. The budget keeps a job that kills its runner every time from looping
-- forever (docs/adr/0016-lost-lease-budget.md).
WITH expired AS (
    SELECT id FROM job_runs
    WHERE state = 'running' AND lease_until < now()
    ORDER BY lease_until
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE job_runs r
SET state = CASE
        WHEN r.cancel_requested THEN 'cancelled'
        WHEN r.lost_leases_used >= r.max_lost_leases THEN 'dead_lettered'
        ELSE 'pending'
    END,
    finished_at = CASE
        WHEN r.cancel_requested OR r.lost_leases_used >= r.max_lost_leases THEN now()
    END,
    lease_expiries = r.lease_expiries + 1,
    lost_leases_used = r.lost_leases_used + CASE WHEN r.cancel_requested THEN 0 ELSE 1 END,
    lease_until = NULL,
    failure_reason = CASE WHEN r.cancel_requested THEN 'cancelled' ELSE 'lease_expired' END,
    failure_detail = NULL,
    last_error = CASE
        WHEN r.cancel_requested THEN format(
            'the lease of worker %%s expired during attempt %%s', r.lease_owner, r.attempt)
        WHEN r.lost_leases_used >= r.max_lost_leases THEN format(
            'the lease of worker %%s expired during attempt %%s: this run has now lost its '
            'lease %%s times and its lost-lease budget (%%s) is spent, so it is dead-lettered '
            'rather than requeued again. The handler may be killing or hanging its runner '
            '(out of memory, os._exit, a segfault, a blocked event loop): fix it, then '
            '`sundial runs replay %%s`',
            r.lease_owner, r.attempt, r.lost_leases_used + 1, r.max_lost_leases, r.id)
        ELSE format(
            'the lease of worker %%s expired during attempt %%s; requeued without spending '
            'maxRetries (lost leases so far: %%s, budget: %%s)',
            r.lease_owner, r.attempt, r.lost_leases_used + 1, r.max_lost_leases)
    END
FROM expired
WHERE r.id = expired.id
RETURNING r.id, r.attempt, r.state, r.has_dependents, r.started_at, r.lease_owner, r.last_error
-- Plan: the CTE reads job_runs_running_by_lease_idx from its oldest lease up to now() (an
-- index range: only the expired runs, however many are running) and the UPDATE probes the
-- primary key per picked id. Checked by tests/integration/store/test_stable_plans.py.
