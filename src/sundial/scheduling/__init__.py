"""The pure scheduling layer: when schedules fire and what a due schedule turns into.

No I/O and no clock reads; time comes in as arguments or through ``clock.Clock``.

- ``cron``: parse ``schedule``/``timeZone``; fire times with explicit DST rules.
- ``spread``: the deterministic per-job offset from ``spreadSeconds``.
- ``fire_budget``: the calendar of ``run_at`` seconds that bounds fires, in all and per namespace.
- ``missed_fires``: Coalesce / Backfill / Skip, bounded by ``startingDeadlineSeconds``.
- ``concurrency``: Forbid / Allow / Replace / BufferOne.
- ``quarantine`` and ``suspension``: when a schedule may not fire.
- ``plan``: all of the above in one call per due schedule, for the trigger loop.
- ``errors``: the exception hierarchy for bad input; ``clock``: injectable clocks.
"""
