"""Peak memory and run time of one Jupyter kernel per course notebook (does a Binder session fit?).

Each notebook is executed top to bottom in a fresh ``python3`` kernel with nbclient (one torch
thread, cwd = the notebook's folder, nothing written back). After every cell the kernel process's
peak resident set size is read: ``VmHWM`` in ``/proc/<pid>/status`` on Linux (the kernel's own
high-water mark, so short spikes inside a cell count), else psutil's current RSS sampled per cell.
Child processes the notebook starts (notebook 09 runs a two-process DDP demo) are sampled with
psutil every 0.1 s, as the proportional set size (PSS) of the kernel plus its children: pages that
forked processes share are counted once in the total, roughly as a container's memory limit counts
them. The larger of the two figures is compared with the limit.
It also reports the wall time and the kernel's own CPU time (user + system, which other load on a
shared machine hardly changes; the kernel start and ``import torch`` are included).

mybinder.org gives a session at most 2 GB; with the Jupyter server and two notebooks open, one
kernel with its children must stay under ``--limit-mib`` (800 MiB by default: notebook 09's DDP workers
start from a fork server, which holds its own copy of torch, because forking the kernel itself after
autograd ran crashes on newer PyTorch builds). The script prints a table, writes
``bench/results/kernel_memory.json`` and exits 1 if any kernel went over the limit (2 if a
notebook failed to run).

Usage: ``python bench/bench_kernel_memory.py [NOTEBOOK ...] [--limit-mib 800]`` (default: every
``notebooks/[0-9][0-9]_*.ipynb``). ``make bench`` runs it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import sys
import threading
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "kernel_memory.json"
MIB = 1024 * 1024
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def peak_rss_bytes(pid: int) -> int | None:
    """The process's peak RSS so far (Linux ``VmHWM``), or its current RSS via psutil, or None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        pass
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss
    except Exception:  # psutil missing, or the process is gone
        return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time the process has used so far (robust to other load on the machine)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        times = psutil.Process(pid).cpu_times()
        return times.user + times.system
    except Exception:
        return None


class TreeSampler(threading.Thread):
    """Sample the memory of a process and all its children (e.g. DDP workers) every ``interval`` s.

    Uses psutil's PSS (proportional set size: pages shared between a forked parent and its children are
    split between them, so the sum is what the machine really holds, as a container limit counts it).
    """

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_bytes = 0
        self.max_children = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        import psutil

        while not self._stop_event.is_set():
            try:
                root = psutil.Process(self.pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            total = 0
            for proc in procs:
                try:
                    total += proc.memory_full_info().pss
                except psutil.Error:
                    continue
            self.peak_bytes = max(self.peak_bytes, total)
            self.max_children = max(self.max_children, len(procs) - 1)
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


def measure(path: Path, timeout: int) -> dict:
    """Execute one notebook; return its wall time, the kernel's CPU time and peak memory, and its status."""
    nb = nbformat.read(path, as_version=4)
    peak: dict[str, float] = {"bytes": 0, "cpu": 0.0}
    samplers: list[TreeSampler] = []
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )

    def kernel_pid() -> int | None:
        return getattr(client.km.provisioner, "pid", None) if client.km and client.km.provisioner else None

    def before_cell(**_: object) -> None:
        pid = kernel_pid()
        if pid and not samplers and importlib.util.find_spec("psutil") is not None:
            samplers.append(TreeSampler(pid))
            samplers[0].start()

    def after_cell(**_: object) -> None:
        pid = kernel_pid()
        value = peak_rss_bytes(pid) if pid else None
        if value:
            peak["bytes"] = max(peak["bytes"], value)
        cpu = cpu_seconds(pid) if pid else None
        if cpu is not None:
            peak["cpu"] = max(peak["cpu"], cpu)

    client.on_cell_execute = before_cell
    client.on_cell_executed = after_cell
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONHASHSEED="0")
    env.pop("MPLBACKEND", None)
    start = time.perf_counter()
    error = None
    try:
        client.execute(env=env, cwd=str(path.parent))
    except CellExecutionError as exc:
        error = ANSI.sub("", str(exc)).strip().splitlines()[-1][:200]
    finally:
        for sampler in samplers:
            sampler.stop()
    seconds = time.perf_counter() - start
    tree = samplers[0] if samplers else None
    return {
        "notebook": path.name,
        "seconds": round(seconds, 1),
        "kernel_cpu_seconds": round(peak["cpu"], 1),
        "peak_rss_mib": round(peak["bytes"] / MIB, 1) if peak["bytes"] else None,
        "peak_tree_pss_mib": round(tree.peak_bytes / MIB, 1) if tree and tree.peak_bytes else None,
        "max_child_processes": tree.max_children if tree else None,
        "error": error,
    }


def worst_mib(row: dict) -> float | None:
    """The figure compared with the limit: the kernel's peak RSS or its process tree's peak, whichever is larger."""
    values = [v for v in (row["peak_rss_mib"], row["peak_tree_pss_mib"]) if v is not None]
    return max(values) if values else None


def main(argv: list[str] | None = None) -> int:
    """Measure every notebook given (default: all course notebooks) and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--limit-mib", type=float, default=800.0, help="fail above this peak RSS (default 800)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell (default 300)")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"where to write results (default {RESULTS})")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        print("no notebooks to measure")
        return 0
    rows = []
    print(f"{'notebook':36} {'wall s':>7} {'kernel CPU s':>12} {'kernel peak':>12} {'+children':>10}")
    for path in notebooks:
        row = measure(Path(path), args.timeout)
        rows.append(row)
        rss = f"{row['peak_rss_mib']:.0f} MiB" if row["peak_rss_mib"] is not None else "n/a"
        tree = f"{row['peak_tree_pss_mib']:.0f} MiB" if row["peak_tree_pss_mib"] is not None else "n/a"
        if row["max_child_processes"]:
            tree += f" ({row['max_child_processes']} proc)"
        note = f"  FAILED: {row['error']}" if row["error"] else ""
        cpu = row["kernel_cpu_seconds"]
        print(f"{row['notebook']:36} {row['seconds']:7.1f} {cpu:12.1f} {rss:>12} {tree:>10}{note}", flush=True)
    measured = [r for r in rows if worst_mib(r) is not None]
    heaviest = max(measured, key=worst_mib) if measured else None
    if heaviest:
        mib, limit = worst_mib(heaviest), args.limit_mib
        print(f"heaviest: {heaviest['notebook']} at {mib:.0f} MiB (limit {limit:.0f} MiB)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "limit_mib": args.limit_mib,
                "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "1"),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "notebooks": rows,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    if any(r["error"] for r in rows):
        return 2
    over = [r for r in measured if worst_mib(r) > args.limit_mib]
    for r in over:
        print(f"OVER THE LIMIT: {r['notebook']} peaked at {worst_mib(r):.0f} MiB > {args.limit_mib:.0f} MiB")
    if len(measured) < len(rows):
        print("could not read the kernel's memory (no /proc and no psutil)")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
