-- One promoter of concurrency keys at a time, until its transaction ends (promote_keyed.sql).
SELECT pg_advisory_xact_lock(hashtext('sundial_promote_keyed'))
