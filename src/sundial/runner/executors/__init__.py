"""Executors run one attempt of a handler and turn whatever happens into an ``Outcome``.

Each has ``async run(invocation) -> Outcome``, ``size``, ``busy`` and ``async close()``;
``router.ExecutorRouter`` picks the one a handler was registered for.
"""
