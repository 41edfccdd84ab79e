"""The backup directory's layout and the names in it (pure: no process, no database).

::

    <backup dir>/wal/<24 hex digits>          WAL segments, copied there by PostgreSQL's archive_command
    <backup dir>/wal/<8 hex>.history           timeline histories (a restored server's new timeline)
    <backup dir>/base/<label>/                 one base backup: base.tar.gz, pg_wal.tar.gz, backup_manifest
    <backup dir>/base/<label>/backup.json      written last: the backup is complete (``BaseBackup``)
    <backup dir>/base/<label>.partial/         a backup being taken (or one that died: removed by the next)

A label is the UTC time the backup started, ``20261129T021500Z``: labels sort as the backups were taken.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

LABEL_FORMAT = "%Y%m%dT%H%M%SZ"
LABEL_RE = re.compile(r"\d{8}T\d{6}Z")
WAL_RE = re.compile(r"[0-9A-F]{24}")
INFO = "backup.json"
PARTIAL = ".partial"
BASE_TAR = "base.tar.gz"
WAL_TAR = "pg_wal.tar.gz"


class LayoutError(ValueError):
    """A backup directory or a base backup that is not as this module writes them."""


@dataclass(frozen=True, slots=True)
class BaseBackup:
    """A complete base backup (its ``backup.json``)."""

    path: Path
    label: str
    started_at: datetime
    finished_at: datetime  # when pg_basebackup returned: the backup is consistent at or before this time
    start_wal: str  # the first WAL segment a restore of it needs (older ones may be pruned)
    start_lsn: str
    end_lsn: str

    def to_json(self) -> dict[str, str]:
        return {
            "label": self.label,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "start_wal": self.start_wal,
            "start_lsn": self.start_lsn,
            "end_lsn": self.end_lsn,
        }

    @classmethod
    def from_json(cls, path: Path, doc: object) -> BaseBackup:
        if not isinstance(doc, dict):
            raise LayoutError(f"{path}: {INFO} is not an object")
        try:
            backup = cls(
                path=path,
                label=str(doc["label"]),
                started_at=_aware(str(doc["started_at"])),
                finished_at=_aware(str(doc["finished_at"])),
                start_wal=str(doc["start_wal"]),
                start_lsn=str(doc["start_lsn"]),
                end_lsn=str(doc["end_lsn"]),
            )
        except (KeyError, ValueError) as exc:
            raise LayoutError(f"{path}/{INFO}: {exc}") from None
        if backup.label != path.name or not WAL_RE.fullmatch(backup.start_wal):
            raise LayoutError(f"{path}/{INFO}: names {backup.label} / {backup.start_wal}")
        return backup


def _aware(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError(f"{text}: no time zone")
    return when


@dataclass(frozen=True, slots=True)
class BackupDir:
    root: Path

    @property
    def wal(self) -> Path:
        return self.root / "wal"

    @property
    def base(self) -> Path:
        return self.root / "base"

    def backups(self) -> list[BaseBackup]:
        """The complete base backups, oldest first (a folder without its backup.json is not one)."""
        found = []
        if not self.base.is_dir():
            return []
        for path in sorted(self.base.iterdir()):
            if not (LABEL_RE.fullmatch(path.name) and (path / INFO).is_file()):
                continue
            try:
                doc = json.loads((path / INFO).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise LayoutError(f"{path}/{INFO}: {exc}") from None
            found.append(BaseBackup.from_json(path, doc))
        return found

    def partials(self) -> list[Path]:
        if not self.base.is_dir():
            return []
        return sorted(p for p in self.base.iterdir() if p.name.endswith(PARTIAL))

    def segments(self) -> list[str]:
        """The archived WAL segments' names, in order."""
        if not self.wal.is_dir():
            return []
        return sorted(p.name for p in self.wal.iterdir() if WAL_RE.fullmatch(p.name))


def label_of(when: datetime) -> str:
    return when.astimezone(UTC).strftime(LABEL_FORMAT)


def newest_before(backups: list[BaseBackup], target: datetime | None) -> BaseBackup | None:
    """The newest backup a restore to ``target`` can start from (finished before it); None: the newest."""
    usable = [b for b in backups if target is None or b.finished_at < target]
    return usable[-1] if usable else None


def to_prune(backups: list[BaseBackup], keep: int) -> tuple[list[BaseBackup], str | None]:
    """Retention: the backups older than the newest ``keep``, and the oldest WAL segment still needed (every
    older one may go: no kept backup's restore reads it). ``(.., None)``: nothing kept, nothing pruned."""
    if keep < 1:
        raise ValueError("keep at least one base backup")
    kept = backups[-keep:]
    if not kept:
        return [], None
    return backups[: len(backups) - len(kept)], kept[0].start_wal


# ---- WAL positions and segment names (PostgreSQL's XLogFileName / pg_lsn text form) -------------------------
def parse_lsn(text: str) -> int:
    hi, sep, lo = text.partition("/")
    if not sep:
        raise ValueError(f"not an LSN: {text!r}")
    return (int(hi, 16) << 32) | int(lo, 16)


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def segment_start(name: str, segment_size: int) -> int:
    """The LSN where WAL segment ``name`` (timeline, log, seg) begins."""
    if not WAL_RE.fullmatch(name):
        raise ValueError(f"not a WAL segment name: {name!r}")
    per_log = 0x1_0000_0000 // segment_size
    return (int(name[8:16], 16) * per_log + int(name[16:24], 16)) * segment_size


def segment_number(name: str, segment_size: int) -> int:
    return segment_start(name, segment_size) // segment_size


def wal_gaps(names: list[str], first: str, last: str, segment_size: int) -> list[str]:
    """Segments missing from the archive between ``first`` and ``last`` (any timeline: a segment counts when
    some timeline has it), as the names they would have on ``last``'s timeline."""
    have = {segment_number(n, segment_size) for n in names}
    lo, hi = segment_number(first, segment_size), segment_number(last, segment_size)
    per_log = 0x1_0000_0000 // segment_size
    timeline = last[:8]
    return [f"{timeline}{n // per_log:08X}{n % per_log:08X}" for n in range(lo, hi + 1) if n not in have][
        :100
    ]
