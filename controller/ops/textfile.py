"""Files that other programs read while they are written: an atomic write, and the values of Prometheus's text
exposition format (node_exporter's textfile collector). Shared by the table's status (status.py) and the floor's
archive workers (floor/archive/report.py); it imports nothing of the table, so the floor's servers need none of
the table's own dependencies to use it (pyproject.toml, extra ``table``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with_suppress_unlink(tmp)
        raise


def with_suppress_unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


# ---- Prometheus text exposition format ----
def prometheus_label(value: str) -> str:
    """A label value of the Prometheus text format: backslash, newline and double quote escaped."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def prometheus_number(value: float) -> str:
    """A sample value of the Prometheus text format: a float as Python writes it, anything else as an integer."""
    return repr(float(value)) if isinstance(value, float) else str(int(value))
