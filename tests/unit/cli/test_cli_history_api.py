"""``sundial history-api`` refuses to start without what it needs, and says what to give it:
its serving certificate and key (TLS only), and Kubernetes credentials to review each caller.
It exits non-zero, so its Deployment shows a crash loop with the reason, not a Pod that
listens and answers nobody."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sundial import cli


def test_the_serving_certificate_and_key_are_required(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli.main, ["history-api", "--dsn", "postgresql://unused/x"])
    assert result.exit_code == 2
    assert "--tls-cert" in result.output


def test_no_kubernetes_credentials_is_a_clear_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pem = tmp_path / "tls.pem"
    pem.write_text("not read before the credentials\n")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(
        cli.main,
        ["history-api", "--dsn", "postgresql://unused/x", "--tls-cert", str(pem),
         "--tls-key", str(pem)],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "the history API is not served: no Kubernetes credentials" in result.output
    assert "KUBECONFIG" in result.output
