"""The attempt: one claim of a run, from the claim to the fenced write that ends it.

Its number is the fencing token behind every guarantee Sundial makes: a heartbeat or a finish
changes a run only while the attempt still holds it. The runner and the pod launcher each run
attempts their own way (a handler call, a Pod), but what an attempt *is* does not differ:

* ``finishes``: how an attempt ended becomes the store's plain ``claims.Finish``: the failure
  class, the error text cut to what the store keeps, and when a retry may run (the backoff
  decision lives here, not in the store, which only writes what it is told);
* ``heartbeats``: batched, fenced lease extensions for whatever attempts a process holds.

This layer sits between the store and its two users (``runner``, ``pods``); it imports the
store and the pure layers, never the other way round (the import-linter contract in
pyproject.toml).
"""
