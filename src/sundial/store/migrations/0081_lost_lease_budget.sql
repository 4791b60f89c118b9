-- A lost lease (the runner or pod launcher holding the run died, or stalled past its lease)
-- no longer spends maxRetries: it spends a budget of its own, as OOM kills do
-- (docs/adr/0016-lost-lease-budget.md), the job's retry.maxLostLeases. A run may lose its lease max_lost_leases times and be
-- requeued each time; the next loss dead-letters it, so a job that kills its runner cannot
-- loop forever. lost_leases_used counts the losses since the run was submitted or replayed
-- (a replay gives a fresh budget, as it does for maxRetries); lease_expiries (0002) keeps
-- counting every loss of the run's life.
ALTER TABLE job_definitions
    ADD COLUMN max_lost_leases integer NOT NULL DEFAULT 3 CHECK (max_lost_leases BETWEEN 0 AND 100);

-- Copied from the job at submit and at each fire, like max_retries.
ALTER TABLE job_runs
    ADD COLUMN max_lost_leases integer NOT NULL DEFAULT 3 CHECK (max_lost_leases >= 0),
    ADD COLUMN lost_leases_used integer NOT NULL DEFAULT 0 CHECK (lost_leases_used >= 0);
