-- The hot queue's outbox triggers (0360) and whether each is enabled.
SELECT tgname, tgenabled <> 'D' AS enabled
FROM pg_trigger
WHERE tgrelid = 'job_runs'::regclass
  AND tgname IN ('job_runs_outbox_inserted', 'job_runs_outbox_pending')
ORDER BY tgname
