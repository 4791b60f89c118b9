"""Sundial: a Kubernetes-native job scheduler on PostgreSQL.

The Python API is kept small on purpose: ``sundial.job`` and ``sundial.JobContext`` for
handler code, and ``sundial.client`` (imported on its own, as it connects to PostgreSQL) to
define jobs and submit, read and cancel runs without Kubernetes. Every other module, the run
store included, is internal and may change between releases.
"""

from __future__ import annotations

from sundial.runner.context import JobContext
from sundial.runner.registry import job

__all__ = ["JobContext", "__version__", "job"]

__version__ = "0.1.0"
