"""Metrics and logs, shared by every Sundial process.

* ``metrics``: Prometheus metrics (``sundial_`` prefix, base units, bounded label sets) and the
  lock-free histogram the runner's hot path records schedule lag in.
* ``trigger_metrics``: what the trigger loop counts (fires by outcome).
* ``json_logs``: JSON logs, one object per line with stable keys, from every daemon.

This package imports nothing else from Sundial, so every layer can use it.
"""
