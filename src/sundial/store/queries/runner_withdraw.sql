-- A runner that stops cleanly takes its row away; a dead one's row expires (see 0082).
DELETE FROM runners WHERE worker_id = %(worker)s OR expires_at < now() - interval '1 hour'
