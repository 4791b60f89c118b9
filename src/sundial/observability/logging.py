"""JSON log lines with stable keys, one object per line: the one log setup of every daemon.

``sundial runner``, ``sundial scheduler``, ``sundial pod-launcher`` and ``sundial operator``
all call ``configure``, so their lines have the same keys and one ``jq`` filter reads them all.

Keys, always present: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``,
``message``. Extra keys come from ``extra={...}`` on the call (``run_id``, ``attempt``,
``handler``, ``worker``, ``holder``, ``queue``, ``reason`` …) and are emitted as given;
``exception`` holds a formatted traceback when there is one. kopf's per-object loggers
contribute ``object`` as ``namespace/name`` (from their ``k8s_ref``; their other ``k8s_*`` and
private attributes are left out). Nothing else is renamed or nested, so
``jq 'select(.message == "lease lost")'`` keeps working across releases. Values that are not
JSON are written as their ``str``.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter", "configure"]

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}

#: Libraries whose per-request or per-event chatter stays out of INFO logs.
_QUIET = ("kopf.objects", "kubernetes", "urllib3")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD or key in entry or key.startswith("_") or key == "settings":
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


def configure(level: int | str = logging.INFO, *, stream: Any = None) -> None:
    """Send every logger's records to ``stream`` (stderr) as JSON lines, replacing the root
    logger's other handlers; libraries' chatter (kopf's per-object lines, the Kubernetes
    client, urllib3) is kept to warnings."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
