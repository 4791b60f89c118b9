"""What a Kubernetes client read (requests, objects and bytes of its GET responses) and wrote.

For the tests and the benchmarks that show a component's reads do not grow with objects it
has no business reading (docs/adr/0009-pod-launcher.md, decision 1). It wraps the client's
REST layer, below every API method, so it counts what came over the wire whatever the code
under measurement asked for; raw (``_preload_content=False``) and deserialised calls alike.
Watches are not counted (their body is a stream). Never used in production.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from kubernetes import client

__all__ = ["Reads", "count_reads", "count_writes"]


@dataclass
class Reads:
    """Totals since the counter was made (or since the last ``take``)."""

    requests: int = 0
    #: Objects in the responses: a list's items, or one for a single object.
    objects: int = 0
    body_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def take(self) -> Reads:
        """The totals so far, and start again from zero."""
        with self._lock:
            taken = replace(self, _lock=threading.Lock())
            self.requests = self.objects = self.body_bytes = 0
        return taken

    def _add(self, body: bytes) -> None:
        objects = 0
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and decoded.get("kind") != "Status":
            items = decoded.get("items")
            objects = len(items) if isinstance(items, list) else 1
        with self._lock:
            self.requests += 1
            self.objects += objects
            self.body_bytes += len(body)


def count_reads(api_client: client.ApiClient) -> Reads:
    """Count every GET ``api_client`` makes from now on (it is changed in place)."""
    reads = Reads()
    rest: Any = api_client.rest_client
    request = rest.request

    def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        response = request(method, url, *args, **kwargs)
        if method.upper() == "GET" and "watch=true" not in url.lower():
            reads._add(response.read())  # cached by the response: its caller reads it again
        return response

    rest.request = counted
    return reads


def count_writes(api_client: client.ApiClient) -> dict[str, int]:
    """Count every write (POST, PUT, PATCH, DELETE) ``api_client`` makes from now on, by
    method; the dict is updated in place (the client is changed in place)."""
    writes: dict[str, int] = {}
    lock = threading.Lock()
    rest: Any = api_client.rest_client
    request = rest.request

    def counted(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        response = request(method, url, *args, **kwargs)
        if method.upper() in ("POST", "PUT", "PATCH", "DELETE"):
            with lock:
                writes[method.upper()] = writes.get(method.upper(), 0) + 1
        return response

    rest.request = counted
    return writes
