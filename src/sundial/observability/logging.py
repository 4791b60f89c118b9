"""JSON log lines with stable keys, one object per line, for every Sundial process.

Keys, always present: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``,
``message``. Extra keys come from ``extra={...}`` on the call (``run_id``, ``attempt``,
``handler``, ``worker``, ``queue``, ``reason`` …) and are emitted as given; ``exception``
holds a formatted traceback when there is one. Nothing else is renamed or nested, so
``jq 'select(.message == "lease lost")'`` keeps working across releases.
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


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure(level: int | str = logging.INFO, *, stream: Any = None) -> None:
    """Send every logger's records to ``stream`` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
