-- The status mirror (docs/adr/0008-operator.md) reads, every few seconds and for every
-- ScheduledJob, the newest finished runs of its schedule. Without an index that is a scan of
-- every finished run still in the hot table per pass. Only schedule fires pay for this index
-- (one entry when they finish); one-shot runs touch no per-job index, as 0007 intended.
CREATE INDEX job_runs_finished_by_schedule_idx ON job_runs (schedule_id, finished_at)
    WHERE schedule_id IS NOT NULL AND finished_at IS NOT NULL;
