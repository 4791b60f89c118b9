"""The operator's HTTPS metrics port takes a renewed certificate without a restart: the
kubelet swaps a mounted Secret's files in place (a new directory behind the ``..data``
symlink), cert-manager renews before expiry, and new connections must get the new pair. A pair
that cannot be loaded keeps the old one serving."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from sundial.operator import liveness
from sundial.operator.metrics_tls import MetricsTls
from support.polling import wait_until

pytestmark = pytest.mark.asyncio


def _pair(directory: Path, name: str) -> tuple[str, str]:
    directory.mkdir()
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert.read_text(), key.read_text()


def _mounted(volume: Path, version: str, cert: str, key: str) -> None:
    """Write ``cert`` and ``key`` as the kubelet updates a Secret volume: a new directory,
    then one atomic rename of the ``..data`` symlink to point at it."""
    (volume / version).mkdir()
    (volume / version / "tls.crt").write_text(cert)
    (volume / version / "tls.key").write_text(key)
    (volume / "..data_tmp").symlink_to(version)
    os.replace(volume / "..data_tmp", volume / "..data")
    for name in ("tls.crt", "tls.key"):
        if not (volume / name).is_symlink():
            (volume / name).symlink_to(f"..data/{name}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _served(port: int) -> str:
    """The certificate the port hands a new connection (PEM, normalised)."""
    return ssl.DER_cert_to_PEM_cert(
        ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", port), timeout=5))
    )


def _normal(pem: str) -> str:
    return ssl.DER_cert_to_PEM_cert(ssl.PEM_cert_to_DER_cert(pem))


async def test_a_renewed_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    first_cert, first_key = _pair(tmp_path / "first", "first")
    second_cert, second_key = _pair(tmp_path / "second", "second")
    volume = tmp_path / "volume"
    volume.mkdir()
    _mounted(volume, "..2026_12_06_1", first_cert, first_key)
    tls = MetricsTls(_free_port(), str(volume / "tls.crt"), str(volume / "tls.key"))
    server = liveness.LivenessServer(0, lambda: "leader", metrics_tls=tls, reload_seconds=0.1)
    await server.start()
    try:
        assert await asyncio.to_thread(_served, tls.port) == _normal(first_cert)

        _mounted(volume, "..2026_12_06_2", second_cert, second_key)
        renewed = await asyncio.to_thread(
            wait_until,
            lambda: _served(tls.port) == _normal(second_cert),
            within=10,
            what="the renewed certificate served",
        )
        assert renewed

        # A pair that does not match: the second pair stays in service.
        _mounted(volume, "..2026_12_06_3", first_cert, second_key)
        assert tls.reload_if_changed() is False
        assert await asyncio.to_thread(_served, tls.port) == _normal(second_cert)
    finally:
        await server.stop()
