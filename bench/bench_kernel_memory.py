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

**A notebook left open.** After the last cell the script reads the kernel's *current* resident memory
(``VmRSS``; with its child processes, their PSS) before the kernel is shut down: what the kernel keeps
while the learner moves on to the next notebook without shutting it down. ``--set taster`` measures the
notebooks of the 3-hour taster (``workshop/agenda.md``) and prints their sum: the memory a session needs
when every taster notebook is left open, against mybinder.org's 2 GB (2,000 MB). A sum of RSS counts
the pages the kernels share (the torch library, read from the same files) once per kernel; with
``--together`` the kernels are kept running until the last notebook has run, and their PSS is read at
that moment, all at once: shared pages counted once, as a container's memory limit counts them.

mybinder.org gives a session at most 2 GB; with the Jupyter server and two notebooks open, one
kernel with its children must stay under ``--limit-mib`` (800 MiB by default: notebook 09's DDP workers
start from a fork server, which holds its own copy of torch, because forking the kernel itself after
autograd ran crashes on newer PyTorch builds). The script prints a table, writes
``bench/results/kernel_memory.json`` and exits 1 if any kernel went over the limit (2 if a
notebook failed to run).

Usage: ``python bench/bench_kernel_memory.py [NOTEBOOK ...] [--set all|taster] [--limit-mib 800]``
(default: every ``notebooks/[0-9][0-9]_*.ipynb``). ``make bench`` runs it.
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
#: The notebooks the 3-hour taster opens (workshop/agenda.md), in the order it opens them.
TASTER = (
    "00_start_here.ipynb",
    "01_tensor_hooks.ipynb",
    "02_forward_hooks.ipynb",
    "05_lifetime_and_global_hooks.ipynb",
    "04_backward_hooks.ipynb",
    "08_applications.ipynb",
)
#: mybinder.org's memory limit per session (2 GB), in MiB.
BINDER_LIMIT_MIB = 2e9 / MIB
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


def current_rss_bytes(pid: int) -> int | None:
    """The process's resident memory now (Linux ``VmRSS``), or psutil's RSS, or None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss
    except Exception:
        return None


def tree_pss_bytes(pid: int) -> int | None:
    """PSS of the process and all its children now (shared pages counted once), or None without psutil."""
    try:
        import psutil

        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except Exception:
        return None
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except Exception:
            continue
    return total


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


def measure(path: Path, timeout: int, keep_open: list | None = None) -> dict:
    """Execute one notebook; return its wall time, the kernel's CPU time and peak memory, and its status.

    With ``keep_open`` (a list), the kernel is not shut down: its client is appended to the list.
    """
    nb = nbformat.read(path, as_version=4)
    peak: dict[str, float] = {"bytes": 0, "cpu": 0.0, "end_rss": 0, "end_pss": 0}
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
        # what the kernel holds now: after the last cell, what a notebook left open keeps
        peak["end_rss"] = (current_rss_bytes(pid) or 0) if pid else 0
        peak["end_pss"] = (tree_pss_bytes(pid) or 0) if pid else 0

    client.on_cell_execute = before_cell
    client.on_cell_executed = after_cell
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONHASHSEED="0")
    env.pop("MPLBACKEND", None)
    start = time.perf_counter()
    error = None
    try:
        client.execute(env=env, cwd=str(path.parent), cleanup_kc=keep_open is None)
    except CellExecutionError as exc:
        error = ANSI.sub("", str(exc)).strip().splitlines()[-1][:200]
    finally:
        for sampler in samplers:
            sampler.stop()
        if keep_open is not None:
            keep_open.append(client)
    seconds = time.perf_counter() - start
    tree = samplers[0] if samplers else None
    return {
        "notebook": path.name,
        "seconds": round(seconds, 1),
        "kernel_cpu_seconds": round(peak["cpu"], 1),
        "peak_rss_mib": round(peak["bytes"] / MIB, 1) if peak["bytes"] else None,
        "peak_tree_pss_mib": round(tree.peak_bytes / MIB, 1) if tree and tree.peak_bytes else None,
        "max_child_processes": tree.max_children if tree else None,
        "end_rss_mib": round(peak["end_rss"] / MIB, 1) if peak["end_rss"] else None,
        "end_tree_pss_mib": round(peak["end_pss"] / MIB, 1) if peak["end_pss"] else None,
        "error": error,
    }


def worst_mib(row: dict) -> float | None:
    """The figure compared with the limit: the kernel's peak RSS or its process tree's peak, whichever is larger."""
    values = [v for v in (row["peak_rss_mib"], row["peak_tree_pss_mib"]) if v is not None]
    return max(values) if values else None


def open_kernels_mib(clients: list) -> dict[str, float]:
    """Memory of every kernel still running (and their children), read now: PSS, USS and RSS sums in MiB."""
    import psutil

    totals = {"pss": 0.0, "uss": 0.0, "rss": 0.0}
    for client in clients:
        pid = getattr(client.km.provisioner, "pid", None) if client.km and client.km.provisioner else None
        if not pid:
            continue
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in procs:
            try:
                info = proc.memory_full_info()
            except psutil.Error:
                continue
            totals["pss"] += info.pss / MIB
            totals["uss"] += info.uss / MIB
            totals["rss"] += info.rss / MIB
    return {key: round(value, 1) for key, value in totals.items()}


def left_open_mib(row: dict) -> float | None:
    """What the kernel holds after its last cell: its RSS, or its process tree's PSS if larger."""
    values = [v for v in (row.get("end_rss_mib"), row.get("end_tree_pss_mib")) if v is not None]
    return max(values) if values else None


def main(argv: list[str] | None = None) -> int:
    """Measure every notebook given (default: all course notebooks) and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument(
        "--set",
        choices=("all", "taster"),
        default="all",
        help="without NOTEBOOK arguments: every course notebook (all) or the 3-hour taster's (taster)",
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="keep every kernel running until the last notebook has run, then read their memory at once",
    )
    parser.add_argument("--limit-mib", type=float, default=800.0, help="fail above this peak RSS (default 800)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell (default 300)")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"where to write results (default {RESULTS})")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not args.notebooks and args.set == "taster":
        notebooks = [REPO / "notebooks" / name for name in TASTER]
    if not notebooks:
        print("no notebooks to measure")
        return 0
    rows = []
    still_open: list | None = [] if args.together else None
    print(f"{'notebook':36} {'wall s':>7} {'kernel CPU s':>12} {'kernel peak':>12} {'+children':>10} {'left open':>10}")
    for path in notebooks:
        row = measure(Path(path), args.timeout, still_open)
        rows.append(row)
        rss = f"{row['peak_rss_mib']:.0f} MiB" if row["peak_rss_mib"] is not None else "n/a"
        tree = f"{row['peak_tree_pss_mib']:.0f} MiB" if row["peak_tree_pss_mib"] is not None else "n/a"
        if row["max_child_processes"]:
            tree += f" ({row['max_child_processes']} proc)"
        note = f"  FAILED: {row['error']}" if row["error"] else ""
        cpu = row["kernel_cpu_seconds"]
        left = f"{left_open_mib(row):.0f} MiB" if left_open_mib(row) is not None else "n/a"
        print(
            f"{row['notebook']:36} {row['seconds']:7.1f} {cpu:12.1f} {rss:>12} {tree:>10} {left:>10}{note}",
            flush=True,
        )
    measured = [r for r in rows if worst_mib(r) is not None]
    heaviest = max(measured, key=worst_mib) if measured else None
    if heaviest:
        mib, limit = worst_mib(heaviest), args.limit_mib
        print(f"heaviest: {heaviest['notebook']} at {mib:.0f} MiB (limit {limit:.0f} MiB)")
    open_rows = [r for r in rows if left_open_mib(r) is not None]
    left_open_total = round(sum(left_open_mib(r) for r in open_rows), 1) if open_rows else None
    if left_open_total is not None:
        print(
            f"left open together: {left_open_total:.0f} MiB for {len(open_rows)} kernels "
            f"(each kernel's resident memory after its last cell; Binder allows {BINDER_LIMIT_MIB:.0f} MiB "
            "per session, the Jupyter server included)"
        )
    together = None
    if still_open is not None:
        try:
            together = open_kernels_mib(still_open)
            print(
                f"all {len(still_open)} kernels open at once: {together['pss']:.0f} MiB PSS (shared pages counted "
                f"once), {together['uss']:.0f} MiB their own (USS), {together['rss']:.0f} MiB summed RSS"
            )
        finally:
            for client in still_open:
                client._cleanup_kernel()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "limit_mib": args.limit_mib,
                "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "1"),
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "notebooks": rows,
                "left_open_total_mib": left_open_total,
                "open_at_once_mib": together,
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
