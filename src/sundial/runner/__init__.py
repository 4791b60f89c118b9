"""``sundial runner``: the worker process that executes registered handlers.

* ``worker``: the claim loop. Claims due runs in batches sized to its free slots, hands each to
  an executor, and writes what happened through ``finisher`` (batched, fenced writes).
* ``settlement``: how an outcome becomes that write (failure class, detail, retry), spending
  ``retry_budgets`` (one per dependency) and feeding ``crash_quarantine`` (handlers whose
  attempts keep killing their process are no longer claimed here).
* ``executors``: one per execution model (async, thread, process, subprocess); each knows how to
  stop a job that runs past its timeout. They never import each other (``router`` picks one).
* ``heartbeats``: keeps the leases of long jobs alive; ``breaker``: circuit breakers and the
  retry budget per declared dependency; ``circuits``: their transitions to ``/metrics`` and
  PostgreSQL (``store.circuits``), for the operator and ``sundial runs``; ``wakeup``:
  LISTEN/NOTIFY with polling behind it.
* ``registry``: the allow-list of handlers; a run can only name a registered handler, never an
  arbitrary import path from a manifest.
* ``exec_command``: ``sundial exec``, one handler in the foreground (a handler job's Pod).

Guarantee: every write about a run names its ``(id, attempt)``. A runner that lost its lease
(paused, cut off, too slow) changes nothing; the newer attempt's result stands. Nothing here
imports kopf, ``scheduler`` or ``pods``.
"""
