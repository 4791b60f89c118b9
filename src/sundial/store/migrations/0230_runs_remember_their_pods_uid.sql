-- The pod launcher records the UID of the Pod it created for an attempt beside its name, so a
-- launcher restarted with the same worker id adopts that object and no other: a Pod made under
-- the same name while no launcher watched (the original deleted) is not the attempt's Pod.
-- Nullable, with no default: adding it rewrites nothing, and a launcher of the previous
-- version, which never writes it, keeps working during a rolling upgrade.
ALTER TABLE job_runs ADD COLUMN pod_uid text
    CONSTRAINT job_runs_pod_uid_check CHECK (length(pod_uid) BETWEEN 1 AND 64);
