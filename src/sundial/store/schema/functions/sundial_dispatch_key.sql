-- Current definition; last changed by migrations/0002_runs.sql.
-- Each priority level is worth 60 seconds of waiting: ordering by this key is strict priority
-- with linear aging (effective priority = priority + waited_seconds / 60), and because the key
-- does not depend on now() it can live in an index. IMMUTABLE is true: the epoch of an instant
-- does not depend on the session's time zone.
CREATE OR REPLACE FUNCTION sundial_dispatch_key(run_at timestamptz, priority smallint)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT extract(epoch FROM run_at)::double precision - priority * 60.0 $$;
