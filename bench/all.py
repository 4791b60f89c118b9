"""Every benchmark of the design workload in one command, and one table of what they found.

Not a test. Runs each benchmark as its own process, one after another (they would only
measure each other if run at once), in its ``--quick`` form (minutes) or full form (about
two hours: the design peak at 6,000/s, the 60-minute soak, 10,000 schedules), keeps each
one's whole output under --logs, and prints one table: the benchmark, its headline figures
and the command that reproduces the row. ``--write-docs`` puts the table, every benchmark's
own table and the machine it ran on (CPUs, memory, load average before and after each run,
date) into docs/performance.md.

    .venv/bin/python bench/all.py --quick [--write-docs]
    .venv/bin/python bench/all.py            # full: run it on a quiet machine
    .venv/bin/python bench/all.py --quick --only faults,soak
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import stack

ROOT = stack.BENCH_DIR.parent


def _rows(output: str) -> list[list[str]]:
    """The data rows of the last Markdown table in ``output``."""
    tables: list[list[list[str]]] = [[]]
    for line in output.splitlines():
        if line.startswith("|-"):
            continue  # the rule under the header
        if line.startswith("|"):
            tables[-1].append([c.strip() for c in line.strip("|").split("|")])
        elif tables[-1]:
            tables.append([])
    found = [t for t in tables if t]
    return found[-1][1:] if found else []


def seed_peak(output: str) -> str:
    rows = _rows(output)
    if not rows:
        return "no table"
    holding = [r for r in rows if r[-1].startswith("holds")]
    best = holding[-1] if holding else None
    broke = next((r for r in rows if r[-1].startswith("BREAKS")), None)
    parts = []
    if best:
        parts.append(f"holds {best[0]}/s (lag p99 {best[6]} ms, {best[2]} runners)")
    if broke:
        parts.append(f"breaks at {broke[0]}/s (p99 {broke[6]} ms): {broke[-1][8:]}")
    return "; ".join(parts) or "no stage held"


def submission(output: str) -> str:
    rows = _rows(output)
    return "; ".join(f"{r[0]} {r[1]} x{r[2]}: {r[3]}/s" for r in rows if r[3] != "-")


def runner_scaling(output: str) -> str:
    rows = _rows(output)
    head = next((line for line in output.splitlines() if "raw claim+finish" in line), "")
    raw = re.search(r"loop: ([\d.]+|None)", head)
    return "; ".join(f"{r[0]} proc: {r[1]} jobs/s, {r[4]} µs/job ({r[5]} raw)" for r in rows) + (
        f"; raw loop {raw.group(1)} µs/job" if raw else ""
    )


def runner_throughput(output: str) -> str:
    keep = (
        "sundial runner",
        "sundial total",
        "pgqueuer ",
        "procrastinate ",
        "raw claim",
        "raw total",
    )
    lines = [re.sub(r"\s+", " ", line.strip()) for line in output.splitlines()]
    return "; ".join(line for line in lines if line.startswith(keep))


def soak(output: str) -> str:
    rows = _rows(output)
    verdict = "; ".join(
        line for line in output.splitlines() if line.startswith(("hot table", "indexes in use"))
    )
    if not rows:
        return verdict or "no table"
    keys = f"; idempotency keys {rows[0][12]} -> {rows[-1][12]}" if len(rows[0]) > 15 else ""
    return (
        f"claim p99 {rows[0][3]} ms at {rows[0][0]} min -> {rows[-1][3]} ms at {rows[-1][0]} min;"
        f" hot rows {rows[0][4]} -> {rows[-1][4]}{keys}; {verdict}"
    )


def key_retention(output: str) -> str:
    return "; ".join(
        line for line in output.splitlines() if line.startswith(("idempotency", "schedule", "exp"))
    )


def faults(output: str) -> str:
    rows = _rows(output)
    if not rows:
        return "no table"
    lost = sum(int(r[3]) for r in rows)
    stale = sum(int(r[4]) for r in rows)
    twice = sum(int(r[6]) for r in rows)
    dupes = sum(int(r[7]) for r in rows)
    return (
        f"{len(rows)} faults: lost {lost}, stale accepted {stale}, duplicate fires {dupes},"
        f" re-run {twice}; recover s: " + ", ".join(f"{r[0]} {r[8]}" for r in rows)
    )


@dataclass(frozen=True)
class Bench:
    name: str
    quick: list[str]
    full: list[str]
    headline: Callable[[str], str]


BENCHES = [
    Bench("seed_peak", ["--quick"], [], seed_peak),
    Bench("submission", ["--quick"], [], submission),
    Bench("runner_scaling", ["--quick"], [], runner_scaling),
    Bench("runner_throughput", ["--jobs", "10000"], ["--jobs", "40000"], runner_throughput),
    Bench("soak", ["--quick"], [], soak),
    Bench("faults", ["--quick"], [], faults),
    Bench("key_retention", ["--keys", "50000", "--fires", "50000"], [], key_retention),
]


def machine() -> str:
    memory = "?"
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    return f"{os.cpu_count()} CPUs, {memory} memory, {os.uname().sysname} {os.uname().release}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only", default="", help="comma-separated: " + ", ".join(b.name for b in BENCHES)
    )
    parser.add_argument("--logs", default="/tmp/sundial-bench", help="where outputs go")
    parser.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    options = parser.parse_args()
    chosen = [b for b in BENCHES if not options.only or b.name in options.only.split(",")]
    logs = Path(options.logs)
    logs.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    rows, outputs = [], []
    for bench in chosen:
        arguments = bench.quick if options.quick else bench.full
        command = [sys.executable, str(stack.BENCH_DIR / f"{bench.name}.py"), *arguments]
        shown = " ".join([".venv/bin/python", f"bench/{bench.name}.py", *arguments])
        load_before = stack.load_average()
        began = time.monotonic()
        print(f"== {shown}  (load {load_before})", flush=True)
        done = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, check=False,
            env=dict(os.environ, SUNDIAL_BENCH_LOGS=str(logs)),
        )  # fmt: skip
        output = done.stdout + (f"\n[stderr]\n{done.stderr[-3000:]}" if done.returncode else "")
        (logs / f"{bench.name}.log").write_text(done.stdout + "\n" + done.stderr)
        minutes = (time.monotonic() - began) / 60
        try:
            headline = bench.headline(done.stdout)
        except (ValueError, IndexError) as error:
            headline = f"could not read its output ({error})"
        if done.returncode:
            headline = f"exit {done.returncode}: {headline}"
        load = f"{load_before} -> {stack.load_average()}"
        rows.append([bench.name, headline, f"{minutes:.1f}", load, f"`{shown}`"])
        outputs.append((shown, load, output.strip()))
        print(headline, flush=True)
    table = stack.table(["benchmark", "figures", "minutes", "load 1/5/15 before -> after",
                         "reproduce"], rows)  # fmt: skip
    print()
    print(table)
    if options.write_docs:
        write_docs(table, outputs, started, options.quick)
    return 0


def write_docs(
    table: str, outputs: list[tuple[str, str, str]], started: datetime, quick: bool
) -> None:
    path = ROOT / "docs" / "performance.md"
    text = path.read_text() if path.exists() else ""
    marker = "<!-- bench/all.py writes below this line -->"
    head = text.split(marker)[0].rstrip() + "\n\n" if marker in text else text
    body = [
        marker,
        "",
        f"## Latest run: {'quick' if quick else 'full'} form, {started:%Y-%m-%d %H:%M} UTC",
        "",
        f"Machine: {machine()}. Reproduce everything with "
        f"`.venv/bin/python bench/all.py{' --quick' if quick else ''}`.",
        "",
        table,
        "",
    ]
    for shown, load, output in outputs:
        body += [f"### `{shown}`", "", f"Load average (1/5/15 min) before -> after: {load}.", "",
                 "```", output, "```", ""]  # fmt: skip
    path.write_text(head + "\n".join(body))


if __name__ == "__main__":
    sys.exit(main())
