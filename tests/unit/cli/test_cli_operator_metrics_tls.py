"""``sundial operator --metrics-tls-cert/--metrics-tls-key``: a pair that cannot serve TLS is
refused before anything starts, with what to give instead."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from sundial import cli


def _pair(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "1", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


def _operator(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, ["operator", "--dsn", "postgresql://unused/x", *args])
    return result.exit_code, result.output


@pytest.fixture
def pairs(tmp_path: Path) -> tuple[tuple[Path, Path], tuple[Path, Path]]:
    return _pair(tmp_path, "one"), _pair(tmp_path, "two")


def test_a_certificate_without_its_key_is_refused(pairs: tuple[tuple[Path, Path], ...]) -> None:
    (cert, _), _ = pairs
    code, output = _operator("--metrics-tls-cert", str(cert))
    assert code == 2 and "--metrics-tls-cert and --metrics-tls-key go together" in output


def test_a_key_of_another_certificate_is_refused(pairs: tuple[tuple[Path, Path], ...]) -> None:
    (cert, _), (_, other_key) = pairs
    code, output = _operator("--metrics-tls-cert", str(cert), "--metrics-tls-key", str(other_key))
    assert code == 2, output
    assert "cannot serve TLS with" in output and "the PEM key it was made for" in output


def test_the_metrics_port_must_not_be_the_liveness_port(
    pairs: tuple[tuple[Path, Path], ...],
) -> None:
    (cert, key), _ = pairs
    code, output = _operator(
        "--metrics-tls-cert", str(cert), "--metrics-tls-key", str(key),
        "--metrics-port", "8080", "--liveness-port", "8080",
    )  # fmt: skip
    assert code == 2 and "is the liveness port" in output
