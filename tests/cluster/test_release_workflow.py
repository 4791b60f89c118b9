"""The workflow that publishes a release (``.github/workflows/release.yaml``) cannot run here,
so it is held to what can be checked: actionlint (with shellcheck over its scripts when the
machine has it) finds nothing wrong, it publishes what ``make dist`` builds under the names the
chart and the README use, and it refuses a tag that is not the project's version."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sundial.localdev import dist

WORKFLOWS = dist.ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yaml"


@pytest.fixture(scope="module")
def actionlint() -> Path:
    built = subprocess.run(
        [str(dist.ROOT / "hack" / "ensure-actionlint")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, f"hack/ensure-actionlint failed:\n{built.stderr}"
    return Path(built.stdout.strip().splitlines()[-1])


def lint(actionlint: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    shellcheck = shutil.which("shellcheck") or ""
    command = [str(actionlint), "-no-color", "-oneline", f"-shellcheck={shellcheck}"]
    return subprocess.run(
        [*command, *map(str, files)], capture_output=True, text=True, timeout=120, check=False
    )


def test_every_workflow_passes_actionlint(actionlint: Path) -> None:
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert RELEASE in files
    result = lint(actionlint, *files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_would_catch_a_broken_workflow(actionlint: Path, tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    broken = workflows / "release.yaml"
    text = RELEASE.read_text().replace("needs: build\n", "needs: biuld\n", 1)
    broken.write_text(text.replace("${{ github.ref_name }}", "${{ github.ref_nme }}", 1))
    result = lint(actionlint, broken)
    assert result.returncode != 0
    assert "biuld" in result.stdout and "ref_nme" in result.stdout, result.stdout


def test_it_publishes_what_make_dist_builds_under_the_charts_names() -> None:
    workflow = yaml.safe_load(RELEASE.read_text())
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    scripts = "\n".join(step.get("run", "") for step in steps)
    assert "make dist" in scripts
    assert "--preserve-digests" in scripts and "digests.json" in scripts
    assert "helm push" in scripts and "oci://" in scripts
    # the registry the chart pulls from by default is the one the images are pushed to
    values = yaml.safe_load((dist.ROOT / "charts" / "sundial" / "values.yaml").read_text())
    owner = values["imageRegistry"].removeprefix("ghcr.io/")
    assert "REGISTRY: ghcr.io/${{ github.repository_owner }}" in RELEASE.read_text()
    assert owner == "sundial-scheduler"
    assert 'echo "::error::tag $TAG does not match version' in scripts


@pytest.mark.parametrize(
    ("version", "chart_version"),
    [("0.1.0", "0.1.0"), ("0.1.0.dev0", "0.1.0-dev0"), ("1.2.3rc1", "1.2.3-rc1")],
)
def test_the_workflows_chart_version_is_make_dists(version: str, chart_version: str) -> None:
    workflow = yaml.safe_load(RELEASE.read_text())
    [step] = [s for s in workflow["jobs"]["build"]["steps"] if s.get("id") == "version"]
    [line] = [ln for ln in step["run"].splitlines() if ln.startswith("chart_version=")]
    expression = line.split("sed -E ", 1)[1].rstrip(")").strip("'")
    converted = subprocess.run(
        ["sed", "-E", expression], input=version, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert converted == chart_version == dist._chart_version(version)


def test_the_release_notes_are_the_changelogs_section_of_the_version() -> None:
    """The notes step, run as the workflow runs it, on the version ``make dist`` builds: the
    CHANGELOG section of that version (a version without one would publish empty notes)."""
    workflow = yaml.safe_load(RELEASE.read_text())
    [step] = [
        s for s in workflow["jobs"]["github-release"]["steps"] if "notes.md" in s.get("run", "")
    ]
    script = step["run"].split("gh release create", 1)[0]
    release = dist.version()
    notes = subprocess.run(
        ["bash", "-c", script.replace("notes.md", "/dev/stdout")],
        env={"VERSION": release, "PATH": "/usr/bin:/bin"},
        cwd=dist.ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    changelog = (dist.ROOT / "CHANGELOG.md").read_text()
    assert f"\n## [{release}] - " in changelog, f"CHANGELOG.md has no section for {release}"
    section = changelog.split(f"\n## [{release}] - ", 1)[1].split("\n", 1)[1].split("\n## ", 1)[0]
    assert notes.strip() and notes.strip() == section.strip()
