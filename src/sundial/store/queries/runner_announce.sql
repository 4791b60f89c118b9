-- A runner says it is alive and what it serves, until expires_at (see 0082).
INSERT INTO runners (worker_id, queues, handlers, expires_at)
VALUES (%(worker)s, %(queues)s::text[], %(handlers)s,
        now() + make_interval(secs => %(ttl_seconds)s::double precision))
ON CONFLICT (worker_id) DO UPDATE
SET queues = excluded.queues,
    handlers = excluded.handlers,
    seen_at = now(),
    expires_at = excluded.expires_at
