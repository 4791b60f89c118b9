-- Circuit breaker state shared between processes (docs/adr/0035-circuit-state-shared.md).
--
-- A breaker lives in each runner process (runner.breaker); its state was seen only there. Each
-- runner now writes one row per dependency it has called: when its breaker changes state, and
-- again on a slow refresh (runner.circuits), never per job. The operator reads the rows of live
-- runners once per mirror pass to set Degraded=True (CircuitOpen) on the ScheduledJobs whose
-- spec.dependency names an open circuit; `sundial runs` reads them to say why a run waits.
--
-- A row belongs to its runner's announcement (runners, 0082): it goes with the runner's row
-- (a clean stop withdraws it; a dead runner's row is purged an hour after it expired), and a
-- reader ignores the rows of runners whose announcement expired. So a runner that dies with an
-- open circuit stops counting as soon as its announcement expires.
CREATE TABLE circuits (
    worker_id  text NOT NULL REFERENCES runners (worker_id) ON DELETE CASCADE,
    dependency text NOT NULL CHECK (length(dependency) BETWEEN 1 AND 253),
    state      text NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
    since      timestamptz NOT NULL,                  -- when the runner's breaker took this state
    updated_at timestamptz NOT NULL DEFAULT now(),    -- the last transition or refresh written
    PRIMARY KEY (worker_id, dependency)
);
