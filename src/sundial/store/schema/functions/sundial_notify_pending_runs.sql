-- Current definition; last changed by migrations/0020_notify_pending_runs.sql.
-- Wake idle runners when runs become claimable at insert (docs/adr/0005-runner-claim-loop.md).
--
-- A statement-level trigger, so a batch insert of 20,000 runs sends one notification per
-- queue, not 20,000; PostgreSQL also folds identical notifications within one transaction.
-- The payload is the queue name, so a runner wakes only for queues it serves. Runs that become
-- pending by UPDATE (promote_due, the reaper, a release) are announced by whoever made them
-- pending (the runner's maintenance tick), not by a trigger: an UPDATE trigger with a
-- transition table would tax every claim, heartbeat and finish. Runners poll as well, so a
-- lost notification delays a run by at most the poll interval.
CREATE OR REPLACE FUNCTION sundial_notify_pending_runs() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sundial_runs', q.queue)
    FROM (SELECT DISTINCT n.queue FROM new_runs n WHERE n.state = 'pending') q;
    RETURN NULL;
END
$$;
