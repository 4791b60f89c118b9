"""How long an error text may be, wherever Sundial keeps or shows one: one limit.

An attempt's error (a traceback, a Pod's message, a cancel's reason) is written to
``job_runs.last_error`` and ``job_run_attempts.error``, to a schedule's ``last_error`` and
``quarantine_message``, and to a JobRun's ``status.lastError``. Each place used to cut at its
own length (16,000, 4,096 and three times 4,000 characters); now every writer cuts with
``truncate`` to ``MAX_ERROR_CHARS``.

The run store's CHECK constraints bound those columns at ``MAX_ERROR_BYTES`` (8 KiB of UTF-8),
twice ``MAX_ERROR_CHARS``: an error of mostly ASCII text keeps its full character budget, and
``truncate`` cuts a text of wider characters further so that it always fits (a test ties the
two numbers to the schema). A cut text keeps its start (what failed) and its end (a traceback's
last lines, the exception), joined by `` … ``.
"""

from __future__ import annotations

__all__ = ["MAX_ERROR_BYTES", "MAX_ERROR_CHARS", "truncate"]

MAX_ERROR_CHARS = 4096
"""The most characters of one error text that Sundial stores or shows (JobRun.status.lastError
has this ``maxLength``)."""

MAX_ERROR_BYTES = 2 * MAX_ERROR_CHARS
"""The bound of the store's error columns in UTF-8 bytes (their CHECK constraints)."""

_MARKER = " … "


def truncate(text: str) -> str:
    """``text`` within ``MAX_ERROR_CHARS`` characters and ``MAX_ERROR_BYTES`` bytes, keeping
    its start and end; a text within both is returned as it is."""
    if len(text) <= MAX_ERROR_CHARS and len(text.encode()) <= MAX_ERROR_BYTES:
        return text
    keep = min(MAX_ERROR_CHARS, len(text)) - len(_MARKER)
    while True:
        head = keep // 4  # the end says more (a traceback's last lines): keep three quarters
        cut = text[:head] + _MARKER + text[len(text) - (keep - head) :]
        if len(cut.encode()) <= MAX_ERROR_BYTES:
            return cut
        keep = keep * MAX_ERROR_BYTES // len(cut.encode())  # shrink in proportion, then check
