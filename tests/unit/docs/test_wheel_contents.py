"""The wheel holds the product and what it reads at run time (the SQL of the store), and not
the repository's own tools: ``sundial.localdev`` (the local cluster, the demo, the throwaway
PostgreSQL) stays out. setuptools used to ship it anyway, as "package data" of ``sundial``,
until package data was limited to what pyproject.toml names."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_wheel_has_the_store_sql_and_no_localdev(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy, so no build/ directory is left in the checkout
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [name for name in names if name.startswith("sundial/localdev")]
    assert "sundial/store/queries/claim.sql" in names
    assert [name for name in names if name.startswith("sundial/store/migrations/")]
    assert [name for name in names if name.startswith("sundial/store/schema/tables/")]
    assert "sundial/py.typed" in names
