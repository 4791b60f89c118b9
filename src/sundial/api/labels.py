"""The labels Sundial puts on the Pods it launches: read by the pod launcher, the operator and
the kubectl plugin (which finds an attempt's Pod by them through the API server alone)."""

from __future__ import annotations

__all__ = ["LABEL_ATTEMPT", "LABEL_INSTANCE", "LABEL_JOB", "LABEL_RUN_ID", "LABEL_TRACKED"]

LABEL_JOB = "sundial.dev/job"
LABEL_RUN_ID = "sundial.dev/run-id"
LABEL_ATTEMPT = "sundial.dev/attempt"
LABEL_INSTANCE = "sundial.dev/instance"
#: Set with the outcome finalizer and removed with it: selects the Pods whose outcome is still
#: to be recorded, so the launcher lists those and not the ended Pods kept for JobRun windows.
LABEL_TRACKED = "sundial.dev/tracked"
