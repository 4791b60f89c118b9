-- The quotas no longer configured: named ones not in %(named)s (which holds '*' when there
-- is a default), and with no default the rows made from it.
DELETE FROM namespace_quotas
WHERE (explicit AND namespace <> ALL(%(named)s::text[]))
   OR (NOT explicit AND %(default)s::int IS NULL)
