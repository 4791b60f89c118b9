"""A TCP address whose target can be moved: what clients of a failed-over Redis reach it by.

A Redis failover is a new primary on another address; clients follow it through Sentinel, a
Kubernetes Service whose endpoint follows the primary's label, or a proxy. bench/faults.py's
``redis-failover`` gives the runners and the scheduler this forwarder's URL and moves it to
the promoted replica, as such a Service would. Moving it closes the open connections (the old
primary is gone), so clients reconnect, as they do after a real failover.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class Forwarder:
    """Forwards each connection to ``127.0.0.1:<target>``; ``move`` changes the target."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="forwarder", daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def move(self, target: int) -> None:
        """New connections go to ``target``; the open ones are closed."""
        self.target = target
        self._close_open()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self._close_open()

    def _close_open(self) -> None:
        with self._lock:
            open_now, self._open = self._open, set()
        for each in open_now:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
            each.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            except OSError:
                client.close()  # the target is down: the client sees a reset and retries
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        # Either side ended: end both (the other pump then ends too) and let them go.
        for each in (source, sink):
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._open -= {source, sink}
