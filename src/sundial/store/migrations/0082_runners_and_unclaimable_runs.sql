-- Runners say what they serve, so a run nobody can claim says why instead of waiting silently.
--
-- Each runner upserts its row every few seconds (expires_at a few beats ahead) and deletes it
-- when it stops; a row past expires_at is a runner that died. handlers maps each registered
-- handler name to its execution model. Maintenance compares pending runs with the live rows
-- and writes job_runs.unclaimable_reason (NULL again once a runner serves the run).
CREATE TABLE runners (
    worker_id  text PRIMARY KEY CHECK (length(worker_id) BETWEEN 1 AND 253),
    queues     text[] NOT NULL,
    handlers   jsonb NOT NULL CHECK (jsonb_typeof(handlers) = 'object'),
    started_at timestamptz NOT NULL DEFAULT now(),
    seen_at    timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);

ALTER TABLE job_runs
    ADD COLUMN unclaimable_reason text CHECK (octet_length(unclaimable_reason) <= 2048);
