"""What a failed journal write means, said in one line an operator can act on (issue 14 item 3).

A write to the journal (SQLite on the table's own disk) fails when the disk is full, when the filesystem went
read-only (an SD card or SSD that errors out is remounted read-only by the kernel, ``errors=remount-ro``) or on
an I/O error. Whatever the cause, nothing that should have been committed was: the caller must not act on it,
must not acknowledge it, and the table goes into the ``journal_io`` fault (docs/state-machine-notes.md).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from controller.effects import JournalWriteFailed

__all__ = [
    "DISK_FULL",
    "IO_ERROR",
    "READ_ONLY",
    "JournalProblem",
    "JournalWriteFailed",
    "classify",
    "is_write_failure",
]

DISK_FULL = "disk_full"
READ_ONLY = "read_only"
IO_ERROR = "io_error"
WORDS = {DISK_FULL: "journal disk full", READ_ONLY: "journal disk read-only", IO_ERROR: "journal I/O error"}


@dataclass(frozen=True, slots=True)
class JournalProblem:
    kind: str  # DISK_FULL | READ_ONLY | IO_ERROR
    detail: str  # the error as SQLite or the OS gave it

    @property
    def text(self) -> str:
        """One line: ``journal disk full (database or disk is full)``."""
        return f"{WORDS[self.kind]} ({self.detail})"


def is_write_failure(exc: BaseException) -> bool:
    """An error of the disk or the database file, as opposed to a bug (a constraint, a misuse of the API)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return False  # another process holds the lock for a moment: not the disk
    if isinstance(exc, sqlite3.OperationalError | OSError):
        return True
    return (
        type(exc) is sqlite3.DatabaseError
    )  # e.g. "database disk image is malformed", "file is not a database"


def classify(exc: BaseException, directory: str | Path | None = None) -> JournalProblem:
    """Name the cause: SQLite's error code first, then the filesystem of ``directory`` (an I/O error on a
    filesystem the kernel just remounted read-only is a read-only disk; one with no space left is a full one)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    errno = getattr(exc, "errno", None)
    detail = str(exc) or type(exc).__name__
    if name.startswith("SQLITE_FULL") or errno == 28:  # ENOSPC
        return JournalProblem(DISK_FULL, detail)
    if name.startswith("SQLITE_READONLY") or errno == 30:  # EROFS
        return JournalProblem(READ_ONLY, detail)
    if directory is not None:
        try:
            st = os.statvfs(directory)
        except OSError:
            st = None
        if st is not None and st.f_flag & os.ST_RDONLY:
            return JournalProblem(READ_ONLY, detail)
        if st is not None and st.f_bavail * st.f_frsize < 64 * 1024:
            return JournalProblem(DISK_FULL, detail)
        probed = _probe_write(Path(directory))  # SQLite says "disk I/O error" for EROFS and ENOSPC alike
        if probed is not None:
            return JournalProblem(probed, detail)
    if "readonly" in detail or "read-only" in detail:
        return JournalProblem(READ_ONLY, detail)
    if "full" in detail:
        return JournalProblem(DISK_FULL, detail)
    return JournalProblem(IO_ERROR, detail)


def _probe_write(directory: Path) -> str | None:
    """Write one byte beside the journal: EROFS (ext4 remounted read-only after an error does not always show
    in statvfs) or ENOSPC name the cause; None if the write works or fails otherwise."""
    probe = directory / ".tablectl-write-probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"x")
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        return {28: DISK_FULL, 30: READ_ONLY}.get(exc.errno or 0)
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None
