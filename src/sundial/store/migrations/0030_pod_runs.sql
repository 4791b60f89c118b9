-- Pod mode (docs/adr/0009-pod-launcher.md). The launcher records on the run which Pod ran its
-- current attempt and how that Pod ended, so JobRun status can show podName, exit code and
-- reason; a new attempt's Pod clears the previous end. startTimeoutSeconds of a Pod job:
-- NULL means the launcher's default.

ALTER TABLE job_runs
    ADD COLUMN pod_name      text CHECK (length(pod_name) BETWEEN 1 AND 253),
    ADD COLUMN pod_exit_code integer,
    ADD COLUMN pod_reason    text CHECK (length(pod_reason) BETWEEN 1 AND 256);

ALTER TABLE job_definitions
    ADD COLUMN start_timeout_seconds integer CHECK (start_timeout_seconds > 0);
