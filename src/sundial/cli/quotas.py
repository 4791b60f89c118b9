"""``sundial quotas``: each namespace's active-run quota, its count, and its runs now.

The quotas are the operator's settings (``--namespace-active-runs``,
``--active-runs-per-namespace``) as stored in PostgreSQL, which enforces them. The count an
insert is checked against only goes up between two counts (the maintenance pass every 5 s by
default, or an insert that finds the quota full), so the table shows it beside the
namespace's active runs counted now: a gap between the two is room the next count gives back.
"""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING

import click

from sundial.cli import runs
from sundial.cli.app import main

if TYPE_CHECKING:
    from sundial.store import quotas as store_quotas

__all__ = ["quotas"]


@main.command("quotas")
@click.option("--dsn", envvar="SUNDIAL_DSN", required=True, help="libpq URL (or SUNDIAL_DSN).")
@click.option(
    "-o",
    "--output",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table, or json (one object per line).",
)
def quotas(dsn: str, output_format: str) -> None:
    """List the namespaces' active-run quotas: QUOTA, COUNTED (what the next run is checked
    against), ACTIVE (runs not ended, now), when it was last counted, and where the quota
    comes from (a namespace named in the operator's settings, or the default)."""
    from sundial.store import quotas as store_quotas

    async def read() -> list[store_quotas.Usage]:
        async with runs.connected(dsn) as pool:
            return await store_quotas.usage(pool)

    rows = runs.run_store_work(read())
    if output_format == "json":
        for row in rows:
            click.echo(json.dumps(_row_json(row), sort_keys=True))
        return
    if not rows:
        click.echo(
            "no quotas: the operator runs without --namespace-active-runs and"
            " --active-runs-per-namespace"
        )
        return
    now = datetime.datetime.now(datetime.UTC)
    table = [("NAMESPACE", "QUOTA", "COUNTED", "ACTIVE", "LAST COUNT", "FROM")]
    for row in rows:
        quota = row.quota
        default = quota.namespace == store_quotas.DEFAULT
        table.append(
            (
                "* (every other namespace)" if default else quota.namespace,
                str(quota.max_active_runs),
                "-" if default else str(quota.active_runs),
                "-" if row.active_now is None else str(row.active_now),
                "-" if default else _ago(row.counted_at, now),
                _source(row),
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        click.echo(
            "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )


def _source(row: store_quotas.Usage) -> str:
    """``named`` (``--namespace-active-runs``) or ``default`` (``--active-runs-per-namespace``:
    the default row itself, and the rows made from it)."""
    from sundial.store import quotas as store_quotas

    if row.quota.namespace == store_quotas.DEFAULT or not row.quota.explicit:
        return "default"
    return "named"


def _ago(moment: datetime.datetime | None, now: datetime.datetime) -> str:
    if moment is None:
        return "never"
    seconds = max(0, int((now - moment).total_seconds()))
    return f"{seconds}s ago" if seconds < 120 else f"{seconds // 60}m ago"


def _row_json(row: store_quotas.Usage) -> dict[str, object]:
    return {
        "namespace": row.quota.namespace,
        "maxActiveRuns": row.quota.max_active_runs,
        "counted": row.quota.active_runs,
        "activeNow": row.active_now,
        "lastCount": None if row.counted_at is None else row.counted_at.isoformat(),
        "from": _source(row),
    }
