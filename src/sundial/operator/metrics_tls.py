"""The operator's HTTPS metrics certificate: loaded at start, and again when its files change.

cert-manager renews a certificate before it expires, and the kubelet swaps a mounted Secret's
files in place. An operator that read them once would serve the old certificate until it
expired, and then fail every scrape. ``MetricsTls.watch`` compares the files' identity
(device, inode, size, modification time) every ``RELOAD_SECONDS`` and loads them into the same
``ssl.SSLContext`` when it changed: new connections get the new certificate, and the port is
never closed. A pair that cannot be loaded (half-written, or a key of another certificate) is
logged and the old one kept; the next change is tried again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from typing import Final

__all__ = ["RELOAD_SECONDS", "MetricsTls"]

log = logging.getLogger("sundial.operator.metrics")

#: How often the certificate's files are looked at.
RELOAD_SECONDS: Final = 30.0


def _context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


class MetricsTls:
    """Where the HTTPS metrics are served and with what: ``port``, and ``context`` made from
    ``cert_file`` (PEM, the chain) and ``key_file``: TLS 1.2 or later, no client certificate
    asked (the caller proves itself with its token). Raises ``OSError`` or ``ssl.SSLError``
    for files that cannot be read or do not match.

    A renewed pair is loaded into a context of its own, and ``context`` hands each new
    connection the latest good one (its ``sni_callback``, which OpenSSL calls for every
    handshake, with or without a server name): loading into the serving context itself would
    leave it holding the new certificate with the old key when the new key is refused."""

    def __init__(self, port: int, cert_file: str, key_file: str) -> None:
        self.port = port
        self.cert_file = cert_file
        self.key_file = key_file
        self._loaded = self._identity()
        self._current = _context(cert_file, key_file)
        self.context = _context(cert_file, key_file)
        self.context.sni_callback = self._hand_over

    def _hand_over(
        self, connection: ssl.SSLObject, _server_name: str | None, _context: ssl.SSLContext
    ) -> None:
        connection.context = self._current

    def _identity(self) -> tuple[tuple[int, int, int, int], ...] | None:
        try:
            found = [os.stat(path) for path in (self.cert_file, self.key_file)]
        except OSError:
            return None
        return tuple((s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns) for s in found)

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed since they were last loaded; True if new
        connections now get the new pair."""
        seen = self._identity()
        if seen is None or seen == self._loaded:
            return False
        try:
            renewed = _context(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as error:
            log.warning(
                "the metrics certificate changed but cannot be loaded; the old one is kept",
                extra={"cert": self.cert_file, "key": self.key_file, "error": str(error)},
            )
            return False
        self._current = renewed
        self._loaded = seen
        log.info("loaded the renewed metrics certificate", extra={"cert": self.cert_file})
        return True

    async def watch(self, every: float = RELOAD_SECONDS) -> None:
        """Reload on change, every ``every`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(every)
            self.reload_if_changed()
