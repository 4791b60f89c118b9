-- One number per schedule for everything history_schedules.sql and history_window.sql return
-- of it, and how many unfinished runs its window lists: the status mirror reads the full rows
-- only of the schedules whose number changed. history.digests() puts those two queries in
-- the two FROM clauses marked below, so the number covers exactly what the mirror would read.
-- The window's rows are joined in their text's order: the same rows give the same number.
-- A schedule is named by its place in the ids given (from 1): integers cost the client less
-- to read than UUIDs.
SELECT q.n,
       hashtextextended(coalesce(sv.t, '-') || '#' || coalesce(wv.t, ''), 0),
       coalesce(wv.active, 0)
FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS q(id, n)
LEFT JOIN (SELECT s.id, s::text AS t FROM (:schedules) s) sv ON sv.id = q.id
LEFT JOIN (SELECT w.schedule_id, string_agg(w::text, '|' ORDER BY w::text) AS t,
                  count(*) FILTER (WHERE w.kind = 'active') AS active
           FROM (:window) w
           GROUP BY w.schedule_id) wv ON wv.schedule_id = q.id
