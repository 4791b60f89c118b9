"""Sundial: a Kubernetes-native job scheduler on PostgreSQL.

The public surface is kept small on purpose; everything not named in ``__all__``
is private and may change without notice.
"""

from __future__ import annotations

from sundial.runner.context import JobContext
from sundial.runner.registry import job

__all__ = ["JobContext", "__version__", "job"]

__version__ = "0.1.0.dev0"
