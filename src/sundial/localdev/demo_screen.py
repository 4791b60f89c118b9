"""The demo's live view of ScheduledJobs and JobRuns: one screen redrawn in place, or lines.

``table`` turns the objects ``kubectl get sj,jr -o json`` returns into the rows of one table
(kind, name, phase, attempt, reason, age of the last change), a pure function. ``Screen``
shows successive tables: on a terminal it redraws the same screen region in place with ANSI
escapes (cursor home, clear to end); anywhere else (a pipe, a log, CI) it prints one plain
line per row that changed since the last table, so a log reads as a history of transitions and
never holds escape codes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

__all__ = ["Row", "Screen", "table"]

_HOME_AND_CLEAR = "\x1b[H\x1b[J"
_SCHEDULED_JOB_LABEL = "sundial.dev/scheduledjob"


@dataclass(frozen=True)
class Row:
    """One object as the demo shows it."""

    kind: str  # "sj" or "jr"
    name: str
    phase: str
    attempt: str
    reason: str
    detail: str  # schedule and next fire for a ScheduledJob; parent or pod for a JobRun

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"


def _moment(text: object, now: datetime) -> str:
    if not isinstance(text, str) or not text:
        return ""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    seconds = int((moment - now).total_seconds())
    return f"in {seconds}s" if seconds >= 0 else f"{-seconds}s ago"


def _ready(conditions: object) -> str:
    if not isinstance(conditions, list):
        return ""
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            state = "Ready" if condition.get("status") == "True" else "NotReady"
            return f"{state} {condition.get('reason') or ''}".strip()
    return ""


def table(objects: Sequence[Mapping[str, Any]], now: datetime | None = None) -> list[Row]:
    """Rows for ``objects`` (ScheduledJobs first, then JobRuns, each by creation order)."""
    now = now or datetime.now(UTC)
    rows: list[tuple[int, str, Row]] = []
    for item in objects:
        metadata = item.get("metadata") or {}
        status = item.get("status") or {}
        spec = item.get("spec") or {}
        created = str(metadata.get("creationTimestamp") or "")
        if item.get("kind") == "ScheduledJob":
            suspended = " suspended" if spec.get("suspend") else ""
            detail = f"{spec.get('schedule', '')!s}{suspended}"
            next_fire = _moment(status.get("nextScheduleTime"), now)
            if next_fire:
                detail += f", next {next_fire}"
            row = Row(
                kind="sj",
                name=str(metadata.get("name", "")),
                phase=_ready(status.get("conditions")),
                attempt="",
                reason=f"active {status.get('activeCount') or 0}",
                detail=detail,
            )
            rows.append((0, created, row))
        elif item.get("kind") == "JobRun":
            labels = metadata.get("labels") or {}
            parent = labels.get(_SCHEDULED_JOB_LABEL) or (spec.get("jobRef") or {}).get("name")
            details = []
            if parent:
                details.append(f"from {parent}")
            if spec.get("dependsOn"):
                details.append("after " + ",".join(str(d) for d in spec["dependsOn"]))
            if status.get("podName"):
                details.append(f"pod {status['podName']}")
            row = Row(
                kind="jr",
                name=str(metadata.get("name", "")),
                phase=str(status.get("phase") or "-"),
                attempt=str(status.get("attempt") or ""),
                reason=str(status.get("reason") or ""),
                detail=" ".join(details),
            )
            rows.append((1, created, row))
    rows.sort(key=lambda entry: (entry[0], entry[1], entry[2].name))
    return [row for _, _, row in rows]


_HEADER = Row("KIND", "NAME", "PHASE", "ATTEMPT", "REASON", "DETAIL")


def _format(rows: Sequence[Row]) -> list[str]:
    cells = [(r.kind, r.name, r.phase, r.attempt, r.reason, r.detail) for r in [_HEADER, *rows]]
    widths = [max(len(line[i]) for line in cells) for i in range(5)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line[:5], widths, strict=True))
        + "  "
        + line[5]
        for line in cells
    ]


class Screen:
    """Shows tables on ``stream``: redrawn in place on a TTY, changed rows as lines otherwise."""

    def __init__(self, stream: IO[str], *, tty: bool | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self._last: dict[str, Row] = {}

    def show(self, rows: Sequence[Row], *, title: str, footer: Sequence[str] = ()) -> None:
        if self.tty:
            text = "\n".join([title, "", *_format(rows), "", *footer])
            self.stream.write(_HOME_AND_CLEAR + text + "\n")
        else:
            stamp = datetime.now(UTC).strftime("%H:%M:%S")
            for row in rows:
                seen = self._last.get(row.key)
                if seen is None or (seen.phase, seen.attempt, seen.reason) != (
                    row.phase,
                    row.attempt,
                    row.reason,
                ):
                    attempt = f" attempt {row.attempt}" if row.attempt else ""
                    reason = f" ({row.reason})" if row.reason else ""
                    self.stream.write(
                        f"{stamp} {row.key} {row.phase}{attempt}{reason} {row.detail}".rstrip()
                        + "\n"
                    )
        self._last = {row.key: row for row in rows}
        self.stream.flush()
