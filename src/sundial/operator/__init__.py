"""The custom resources: ScheduledJob and JobRun objects reconciled through kopf.

This is the only package that imports kopf. What lives here:

* ``handlers``: kopf's entry points, the fast path from a watch event to PostgreSQL;
  ``scheduled_jobs`` and ``job_runs`` do the reconciling (idempotent, level-triggered, keyed by
  the object's uid) and turn bad input into ``Stalled`` and a Warning Event, never a crash.
* ``mirror``: the status mirror. PostgreSQL holds every run; the mirror keeps a bounded window
  of them visible as JobRun objects and each ScheduledJob's status current. Its write rate
  follows the number of jobs, not the number of runs.
* ``status``: what a status should be, computed from PostgreSQL (pure); ``events``: Events
  posted off the hot path; ``announcer``: the trigger loop telling Kubernetes what it fired.
* ``pod_hooks``: what the operator adds to the pod launcher it hosts (owner references, Pod
  Events); ``kube``: the operator's own API calls outside kopf's handlers.
* ``runtime``: ``sundial operator``, one process hosting kopf, the trigger loop, the mirror and
  the pod launcher, leading by a lease row in PostgreSQL (a standby waits).

Guarantee: everything here can be recomputed from PostgreSQL and the API server, so a
restarted or replaced operator catches up on its next pass; no decision lives only in memory.
"""
