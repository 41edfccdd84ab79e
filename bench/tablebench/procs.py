"""Processes as Linux's /proc shows them (where the bench, the soak and the benchmarks run), and the one way the
tooling stops a process it started."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name: state at 0, ppid at 1, utime and stime at 11
    and 12 (proc(5), counted from the state); None when the process is gone. The command name may hold spaces
    and parentheses, so the fields start after its last ``)``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].decode(errors="replace").split()


def running(pid: int | str) -> bool:
    """The process exists and is not a zombie (ended, not yet reaped)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def descendants(root: int) -> set[int]:
    """Every process under ``root`` now: its children, their children, ..."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := stat_fields(entry)) is not None:
            parent[int(entry)] = int(fields[1])
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def stop_process(
    proc: subprocess.Popen[Any] | None, sig: signal.Signals = signal.SIGTERM, timeout: float = 10.0
) -> int | None:
    """Ask ``proc`` to end with ``sig``, SIGKILL if it has not within ``timeout`` s; its exit status (None: no
    process)."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
