"""Who is asking the history API: the user the API server vouches for, or nobody.

The history API is an aggregated API: users call the API server, which authenticates them,
authorizes the request with the cluster's RBAC and forwards it here over TLS, presenting its
front-proxy client certificate and naming the user in request headers (``X-Remote-User``,
``X-Remote-Group``, ``X-Remote-Extra-*``). Those headers mean something only on a connection
whose client certificate the front-proxy CA signed, with a name the cluster allows; anyone else
could write them. The cluster publishes that CA, the allowed names and the header names in the
ConfigMap ``kube-system/extension-apiserver-authentication`` (the ``requestheader-*`` keys),
which ``FrontProxy.from_config_map`` reads.

The TLS context this module builds requires a client certificate from that CA, so a direct
connection to the port (the way around RBAC that a plain HTTP endpoint leaves open) fails in
the handshake, before a byte of the request is read.
"""

from __future__ import annotations

import json
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sundial.errors import SundialError

__all__ = [
    "CONFIG_MAP",
    "CONFIG_MAP_NAMESPACE",
    "Caller",
    "FrontProxy",
    "FrontProxyFollower",
    "FrontProxyMissingError",
    "NotFromFrontProxyError",
]

CONFIG_MAP: Final = "extension-apiserver-authentication"
CONFIG_MAP_NAMESPACE: Final = "kube-system"


class FrontProxyMissingError(SundialError):
    """The cluster publishes no front-proxy CA: its API server has no aggregation layer."""


class NotFromFrontProxyError(SundialError):
    """A request that did not come from the API server's front proxy."""


@dataclass(frozen=True)
class Caller:
    """The user as the API server authenticated them."""

    user: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _names(data: Mapping[str, str], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    text = data.get(key)
    if not text:
        return default
    try:
        names = json.loads(text)
    except ValueError:
        return default
    return tuple(str(name) for name in names) if isinstance(names, list) else default


@dataclass(frozen=True)
class FrontProxy:
    """The front proxy's CA and conventions, as the cluster publishes them."""

    client_ca: str
    #: Common names the front proxy's certificate may carry; empty: any the CA signed.
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)

    @classmethod
    def from_config_map(cls, data: Mapping[str, str] | None) -> FrontProxy:
        """From the ConfigMap's data; ``FrontProxyMissingError`` saying what to configure."""
        ca = (data or {}).get("requestheader-client-ca-file", "").strip()
        if not ca:
            raise FrontProxyMissingError(
                f"the ConfigMap {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP} has no "
                "requestheader-client-ca-file: the API server runs without its aggregation "
                "layer, so nothing can vouch for a caller. Start kube-apiserver with "
                "--requestheader-client-ca-file and --proxy-client-cert-file/--proxy-client-"
                "key-file (managed clusters have them), or turn the history API off"
            )
        values = data or {}
        return cls(
            client_ca=ca,
            allowed_names=_names(values, "requestheader-allowed-names", ()),
            username_headers=_names(values, "requestheader-username-headers", ("X-Remote-User",)),
            group_headers=_names(values, "requestheader-group-headers", ("X-Remote-Group",)),
            extra_prefixes=_names(
                values, "requestheader-extra-headers-prefix", ("X-Remote-Extra-",)
            ),
        )

    def server_context(self, cert_file: str, key_file: str) -> ssl.SSLContext:
        """TLS for the history port: our serving certificate, and a client certificate from
        the front-proxy CA required of every connection."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cadata=self.client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert_file, key_file)
        return context

    def caller(self, peer_certificate: Mapping[str, Any] | None, headers: Any) -> Caller:
        """The user named by ``headers`` on a connection whose verified client certificate is
        ``peer_certificate`` (``ssl.SSLSocket.getpeercert()``)."""
        if not peer_certificate:
            raise NotFromFrontProxyError("no client certificate: only the API server may call")
        names = {
            value
            for entry in peer_certificate.get("subject", ())
            for key, value in entry
            if key == "commonName"
        }
        if self.allowed_names and not names & set(self.allowed_names):
            raise NotFromFrontProxyError(
                f"client certificate {sorted(names)} is not one of the front proxy's names "
                f"{list(self.allowed_names)}"
            )
        user = next((headers[name] for name in self.username_headers if headers.get(name)), "")
        if not user:
            raise NotFromFrontProxyError("the front proxy named no user")
        groups = tuple(
            group
            for name in self.group_headers
            for value in headers.getall(name, ())
            for group in value.split(",")
            if group.strip()
        )
        extra: dict[str, list[str]] = {}
        for header, value in headers.items():
            for prefix in self.extra_prefixes:
                if header.lower().startswith(prefix.lower()):
                    key = urllib.parse.unquote(header[len(prefix) :]).lower()
                    extra.setdefault(key, []).extend(part.strip() for part in value.split(","))
        return Caller(
            user=user,
            groups=tuple(group.strip() for group in groups),
            extra={key: tuple(values) for key, values in extra.items()},
        )


class FrontProxyFollower:
    """The front proxy as the cluster publishes it now.

    A cluster rotates its front-proxy CA (kubeadm's certificate renewal, a managed control
    plane's rotation): the API server then presents a certificate the CA read at start-up does
    not know, and every history request fails its handshake until the history API restarts.
    ``refresh`` reads the ConfigMap again and says whether anything changed, so the server can
    be given a TLS context of the new CA."""

    def __init__(
        self, read: Callable[[], Awaitable[Mapping[str, str] | None]], current: FrontProxy
    ) -> None:
        self._read = read
        self.current = current

    async def refresh(self) -> bool:
        """Read the ConfigMap; ``True`` when the front proxy it describes changed. Raises
        (``FrontProxyMissingError``, or the read's error) and keeps the current one when the
        ConfigMap cannot be read or names no CA."""
        published = FrontProxy.from_config_map(await self._read())
        if published == self.current:
            return False
        self.current = published
        return True
