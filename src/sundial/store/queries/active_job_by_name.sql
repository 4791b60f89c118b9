-- The id of the active job definition of a name in a namespace (one at most: a unique index).
SELECT id FROM job_definitions WHERE active AND namespace = %(namespace)s AND name = %(name)s
