"""Run ``python -m sundial ARGS...`` with a heap report written on SIGUSR1.

Not a test, and not part of the operator: ``bench/operator_memory.py --heap`` starts the
operator through this wrapper to find where its memory goes. On SIGUSR1 it writes, into
``$SUNDIAL_HEAP_DIR/heap-<n>.txt``:

* the resident set (VmRSS, VmHWM) beside what tracemalloc traces, so the part Python's
  allocator does not account for (the interpreter, C libraries, freed but unreturned arenas)
  shows as the difference;
* glibc's ``mallinfo2``: bytes malloc holds in its arenas, in use and free (fragmentation);
* tracemalloc's largest allocations grouped by traceback and by file;
* ``gc`` object counts by type.

``SUNDIAL_HEAP_FRAMES`` (default 8) frames are kept per allocation; 0 turns tracemalloc off
(the counts and mallinfo still work, at no cost while running).

    SUNDIAL_HEAP_DIR=/tmp/heap python bench/operator_heap.py operator --dsn ...
"""

from __future__ import annotations

import collections
import ctypes
import gc
import os
import runpy
import signal
import sys
import time
import tracemalloc
from pathlib import Path
from types import FrameType


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo() -> str:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError) as error:
        return f"mallinfo2 unavailable: {error}"
    mib = 1024 * 1024
    return (
        f"malloc arenas (non-mmapped) {info.arena / mib:.1f} MiB, in use {info.uordblks / mib:.1f}"
        f" MiB, free {info.fordblks / mib:.1f} MiB; mmapped blocks {info.hblks}"
        f" ({info.hblkhd / mib:.1f} MiB)"
    )


def _status() -> str:
    wanted = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads")
    lines = Path("/proc/self/status").read_text().splitlines()
    return ", ".join(line.replace("\t", " ") for line in lines if line.split(":")[0] in wanted)


def _report(number: int) -> str:
    out: list[str] = [f"# heap report {number} at {time.strftime('%H:%M:%S')}", _status()]
    out.append(_mallinfo())
    out.append(f"modules imported: {len(sys.modules)}")
    counts = collections.Counter(type(item).__name__ for item in gc.get_objects())
    out.append(f"gc-tracked objects: {sum(counts.values())}")
    out.extend(f"  {count:>9} {name}" for name, count in counts.most_common(30))
    if tracemalloc.is_tracing():
        current, peak = tracemalloc.get_traced_memory()
        out.append(f"tracemalloc: {current / 2**20:.1f} MiB traced, peak {peak / 2**20:.1f} MiB")
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        out.append("## by file")
        for stat in snapshot.statistics("filename")[:40]:
            where = stat.traceback[0].filename
            out.append(f"  {stat.size / 2**20:8.2f} MiB {stat.count:>9} {where}")
        out.append("## by line")
        for stat in snapshot.statistics("lineno")[:40]:
            frame = stat.traceback[0]
            out.append(
                f"  {stat.size / 2**20:8.2f} MiB {stat.count:>9} {frame.filename}:{frame.lineno}"
            )
        out.append("## by traceback")
        for stat in snapshot.statistics("traceback")[:25]:
            out.append(f"  {stat.size / 2**20:8.2f} MiB in {stat.count} blocks")
            out.extend(f"      {line}" for line in stat.traceback.format(most_recent_first=True))
    return "\n".join(out) + "\n"


def main() -> None:
    directory = Path(os.environ.get("SUNDIAL_HEAP_DIR", "."))
    frames = int(os.environ.get("SUNDIAL_HEAP_FRAMES", "8"))
    if frames:
        tracemalloc.start(frames)
    written = 0

    def dump(signum: int, frame: FrameType | None) -> None:
        nonlocal written
        written += 1
        (directory / f"heap-{written}.txt").write_text(_report(written))

    signal.signal(signal.SIGUSR1, dump)
    sys.argv = ["sundial", *sys.argv[1:]]
    runpy.run_module("sundial", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
