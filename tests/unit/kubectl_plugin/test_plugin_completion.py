"""Shell completion: kubectl's plugin protocol (``kubectl_complete-sundial``) and click's."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sundial.kubectl_plugin import main


def complete(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *words: str):
    monkeypatch.setattr("sys.argv", ["kubectl_complete-sundial", "__complete", *words])
    main.complete()
    return capsys.readouterr().out.splitlines()


def test_verbs_then_cobras_directive(monkeypatch, capsys) -> None:
    lines = complete(monkeypatch, capsys, "")
    assert lines[-1] == ":4"
    assert {"get", "run", "wait", "logs", "lint", "backfill", "history", "replay"} <= set(lines)
    assert complete(monkeypatch, capsys, "re") == ["replay", "resume", ":4"]


def test_resource_types_and_options(monkeypatch, capsys) -> None:
    assert complete(monkeypatch, capsys, "get", "j") == ["jr", "jobruns", ":4"]
    assert "--all-namespaces" in complete(monkeypatch, capsys, "get", "sj", "--")


def test_names_complete_to_nothing_when_the_cluster_cannot_be_asked(
    monkeypatch, capsys, tmp_path
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    assert complete(monkeypatch, capsys, "wait", "") == [":4"]


def test_the_completion_script_names_the_executable() -> None:
    result = CliRunner().invoke(main.cli, ["completion", "bash"])
    assert result.exit_code == 0
    assert "_KUBECTL_SUNDIAL_COMPLETE" in result.output and "kubectl-sundial" in result.output
