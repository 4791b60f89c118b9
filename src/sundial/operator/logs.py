"""JSON logs with stable keys: one object per line, ``time level logger message`` + extras.

Extras passed with ``extra={...}`` become top-level keys (``object``, ``run_id`` …); kopf's
per-object loggers contribute ``object`` as ``namespace/name``. Values that are not JSON are
written as their ``str``.
"""

from __future__ import annotations

import datetime
import json
import logging
from typing import Any

__all__ = ["JsonFormatter", "configure"]

_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys()
    | {"message", "asctime", "taskName"}
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD or key.startswith("_") or key == "settings":
                continue
            if key == "k8s_ref" and isinstance(value, dict):
                entry["object"] = f"{value.get('namespace')}/{value.get('name')}"
                continue
            if key.startswith("k8s_"):
                continue
            entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure(level: int = logging.INFO) -> None:
    """Send every logger's records to stderr as JSON (replacing other root handlers)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    # kopf's per-event chatter stays at debug unless asked for.
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.WARNING)
