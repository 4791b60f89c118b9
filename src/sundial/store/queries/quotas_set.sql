-- The quotas named (and '*', the default), kept counts and all: a namespace whose row was
-- made from the default becomes named.
INSERT INTO namespace_quotas (namespace, max_active_runs, explicit)
SELECT namespace, max_active_runs, true
FROM unnest(%(namespaces)s::text[], %(quotas)s::int[]) AS q(namespace, max_active_runs)
ON CONFLICT (namespace) DO UPDATE
SET max_active_runs = excluded.max_active_runs, explicit = true
