-- Every non-HOT update of a run (submit, claim, finish) writes an entry into each index whose
-- predicate the new row version matches. job_runs_job_idx (job_id, id) matched every row, so
-- it cost two index inserts per run for queries that only ever look at a subset:
--
-- * concurrency policy (Forbid / Replace) asks for the unfinished runs of one schedule;
-- * history per job (status mirror) reads finished runs, in the hot table through
--   job_runs_finished_idx and in finished_runs through finished_runs_job_idx.
--
-- One-shot runs (no schedule) now touch no per-job index at all until they finish.
DROP INDEX job_runs_job_idx;
CREATE INDEX job_runs_unfinished_by_schedule_idx ON job_runs (schedule_id)
    WHERE schedule_id IS NOT NULL AND finished_at IS NULL;
