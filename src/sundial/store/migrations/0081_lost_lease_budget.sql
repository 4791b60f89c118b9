-- A lost lease (the runner or pod launcher holding the run died, or stalled past its lease)
-- no longer spends maxRetries: it spends a budget of its own, as OOM kills do
-- (docs/adr/0016-lost-lease-budget.md). A run may lose its lease max_lost_leases times and be
-- requeued each time; the next loss dead-letters it, so a job that kills its runner cannot
-- loop forever. lease_expiries (0002) already counts the losses.
ALTER TABLE job_runs
    ADD COLUMN max_lost_leases integer NOT NULL DEFAULT 3 CHECK (max_lost_leases >= 0);
