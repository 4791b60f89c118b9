-- A runner says it is alive and what it serves, until expires_at (see 0082), and for which
-- namespaces (NULL: all; 0200).
INSERT INTO runners (worker_id, queues, handlers, expires_at, namespaces)
VALUES (%(worker)s, %(queues)s::text[], %(handlers)s,
        now() + make_interval(secs => %(ttl_seconds)s::double precision),
        %(namespaces)s::text[])
ON CONFLICT (worker_id) DO UPDATE
SET queues = excluded.queues,
    namespaces = excluded.namespaces,
    handlers = excluded.handlers,
    seen_at = now(),
    expires_at = excluded.expires_at
