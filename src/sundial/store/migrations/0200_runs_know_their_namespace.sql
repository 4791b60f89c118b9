-- A run carries its job's namespace, copied at submit as its queue is, and a runner says which
-- namespaces it serves: a run is claimed only by a runner that serves its namespace, without a
-- join in the claim (queries/claim.sql). NULL in runners.namespaces: every namespace.
--
-- job_runs.namespace stays nullable so that a process of the previous version, still inserting
-- during a rolling upgrade, is not refused; such a run is claimed only by a runner that serves
-- every namespace, never by one that serves some (a claim filter never matches NULL).
ALTER TABLE job_runs ADD COLUMN namespace text;
UPDATE job_runs r SET namespace = j.namespace FROM job_definitions j WHERE j.id = r.job_id;
ALTER TABLE runners ADD COLUMN namespaces text[];
