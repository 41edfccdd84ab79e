"""The journal's filesystem: free space and inodes (issue 27 §6), measured with ``statvfs``.

A full disk is otherwise noticed only when a write fails, and SQLite may go on for a while by reusing its WAL's
space. The service measures the journal's filesystem every few seconds: below ``[journal] disk_warn_free_mb`` /
``disk_warn_free_inodes`` a warning alert, below ``disk_refuse_free_mb`` / ``disk_refuse_free_inodes`` no new
round (the round in progress always finishes) and a critical alert. `tablectl status` and the metrics show both
numbers."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

MB = 1024 * 1024


class DiskLevel(Enum):
    OK = "ok"
    WARN = "warn"  # a warning alert
    REFUSE = "refuse"  # no new round


@dataclass(frozen=True, slots=True)
class DiskSpace:
    free_bytes: int  # available to the service (not root's reserve)
    free_inodes: int


@dataclass(frozen=True, slots=True)
class DiskLimits:
    warn_free_mb: int
    refuse_free_mb: int
    warn_free_inodes: int
    refuse_free_inodes: int


def measure(directory: str | Path) -> DiskSpace:
    """The filesystem holding ``directory`` (OSError if it cannot be asked)."""
    st = os.statvfs(directory)
    return DiskSpace(free_bytes=st.f_bavail * st.f_frsize, free_inodes=st.f_favail)


def level(space: DiskSpace, limits: DiskLimits) -> DiskLevel:
    if space.free_bytes < limits.refuse_free_mb * MB or space.free_inodes < limits.refuse_free_inodes:
        return DiskLevel.REFUSE
    if space.free_bytes < limits.warn_free_mb * MB or space.free_inodes < limits.warn_free_inodes:
        return DiskLevel.WARN
    return DiskLevel.OK


def describe(space: DiskSpace) -> str:
    return f"{space.free_bytes // MB} MB and {space.free_inodes} inodes free"
