"""Keeping the database password out of every message (pure, plus one logging filter).

libpq repeats a connection string it cannot parse in its error (``missing "=" after
"postgres:/u:PASSWORD@h" in connection info string``), and psycopg_pool logs that error on
every retry. So any text that leaves the store with a DSN nearby goes through ``redact``, and
``LogFilter`` (on psycopg's loggers, installed by ``pool``) does the same for their records:
the password of every DSN the process opened is replaced by ``***``, whatever the DSN's form
(URL, ``key=value`` or garbled), and so is the DSN itself where it appears whole.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Final
from urllib.parse import unquote

__all__ = ["MASK", "LogFilter", "passwords", "redact", "remember"]

MASK: Final = "***"
_SHORTEST: Final = 3

#: ``scheme://user:PASSWORD@`` or a garbled ``user:PASSWORD@host``.
_URL_PASSWORD = re.compile(r"(?:^|[/\s\"'])[^:/@\s\"']*:(?P<password>[^@\s\"']+)@")
#: ``password=PASSWORD`` or ``password='PASS WORD'`` in a key=value string or a URL query.
_KEY_PASSWORD = re.compile(r"password\s*=\s*(?:'(?P<quoted>(?:[^'\\]|\\.)*)'|(?P<bare>[^\s&]+))")

_known: set[str] = set()
_lock = threading.Lock()


def passwords(dsn: str) -> set[str]:
    """Every string in ``dsn`` that may be its password (raw and URL-decoded)."""
    found: set[str] = set()
    for match in _URL_PASSWORD.finditer(dsn):
        found.add(match.group("password"))
    for match in _KEY_PASSWORD.finditer(dsn):
        found.add(match.group("quoted") or match.group("bare") or "")
    found |= {unquote(value) for value in found}
    # A one- or two-character "password" would mask those characters everywhere, and is no
    # secret anyway.
    return {value for value in found if len(value) >= _SHORTEST}


def redact(text: str, *dsns: str) -> str:
    """``text`` with the password of each of ``dsns`` (and of every DSN ``remember``-ed)
    replaced by ``***``."""
    secrets: set[str] = set()
    for dsn in dsns:
        secrets |= passwords(dsn)
    with _lock:
        secrets |= _known
    # Longest first, so a password that contains another is masked whole.
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def remember(dsn: str) -> None:
    """Mask this DSN's password in every later ``redact`` and log record of the process."""
    found = passwords(dsn)
    with _lock:
        _known.update(found)


class LogFilter(logging.Filter):
    """Rewrites a record's message (with its arguments and exception) through ``redact``."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _lock:
            if not _known:
                return True
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message = f"{message}: {record.exc_info[1]}"
            record.exc_info = None
            record.exc_text = None
        record.msg = redact(message)
        record.args = None
        return True
