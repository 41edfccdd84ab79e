"""Processes as Linux's /proc shows them (where the bench, the soak and the benchmarks run), and stopping one
that was started."""

from __future__ import annotations

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


def stop_process(proc: subprocess.Popen[Any] | None, timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds, of a process this program started (if still running)."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
