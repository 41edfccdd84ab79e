"""`tablectl journal archive`: copy the journal's records up to a signed checkpoint into an archive file, and
prove the copy before anyone relies on it.

The archive is an SQLite file with the journal's own ``records`` table holding records 1..c, where record c is
a ``checkpoint`` record signed with the table's audit key (from a journal already pruned: records a..c, where
record a is its anchor, the checkpoint record the previous archive ended in). It is verified after writing: the
hash chain from the genesis (or the anchor), every checkpoint record's signature and signed head on the way
(``Journal.verify`` with the key), and the last record being a checkpoint the key signed whose head is the record
before it. A copy that fails is deleted. The live journal is only read (a read-only connection: the service may
be running).

This is the first half of retention (docs/deploy.md §8): the floor's archive (floor) is the primary
copy of what the table reported; the file archive is the fallback. The second half, deleting what an archive
holds from the live journal, is ``tablectl journal prune`` (controller/ops/prune.py)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from controller.audit.checkpoint import CheckpointError, verify_checkpoint
from controller.journal.store import CHECKPOINT_KIND, KIND_INDEXED, PRUNED_KIND, Journal


class ArchiveError(Exception):
    """Why no archive was written (or why an archive does not verify)."""


@dataclass(frozen=True, slots=True)
class Archived:
    path: Path
    records: int  # first_seq..checkpoint_seq
    checkpoint_seq: int
    checkpoint_ts: str
    first_seq: int = 1  # after a prune: the anchor the archive starts from
    checkpoint_hash: str = ""  # the hash of record checkpoint_seq (the live journal's record must carry it)


def _checkpoint_at_or_before(src: sqlite3.Connection, before: int | None) -> tuple[int, str]:
    sql = f"SELECT seq, data FROM records WHERE kind = ? AND {KIND_INDEXED}"
    params: list[object] = [CHECKPOINT_KIND]
    if before is not None:
        sql += " AND seq <= ?"
        params.append(before)
    row = src.execute(sql + " ORDER BY seq DESC LIMIT 1", params).fetchone()
    if row is None:
        where = f" at or before record {before}" if before is not None else ""
        raise ArchiveError(f"no signed checkpoint record{where}: nothing can be archived verifiably")
    return row[0], row[1]


def verify_archive(path: str | Path, public_key: str) -> Archived:
    """The archive's chain from the genesis, its checkpoints signed by ``public_key``, ending in one."""
    journal = Journal.__new__(Journal)
    try:
        journal._conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ArchiveError(f"{path}: cannot be read: {exc}") from None
    journal.audit_public_key = public_key
    try:
        try:
            result = journal.verify()
            last = journal._conn.execute(
                "SELECT seq, kind, data, prev_hash, hash FROM records ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            first = journal.first_seq()
        except sqlite3.Error as exc:
            raise ArchiveError(f"{path}: not a journal archive: {exc}") from None
        if not result.ok:
            raise ArchiveError(f"{path}: BROKEN at record {result.first_bad_seq}: {result.reason}")
        if last is None or last[1] != CHECKPOINT_KIND:
            raise ArchiveError(f"{path}: does not end in a signed checkpoint record")
        try:
            cp = verify_checkpoint(json.loads(last[2]), public_key)
        except (CheckpointError, ValueError) as exc:
            raise ArchiveError(f"{path}: record {last[0]}: {exc}") from None
        if cp.seq != last[0] - 1 or cp.hash != last[3] or result.records != last[0] - first + 1:
            raise ArchiveError(f"{path}: the last checkpoint does not sign the records before it")
        return Archived(Path(path), result.records, last[0], cp.ts, first, last[4])
    finally:
        journal._conn.close()


def archive(db: str | Path, to: str | Path, public_key: str, before: int | None = None) -> Archived:
    """Records 1..c (c: the newest checkpoint record at or before ``before``) into a new file ``to``, verified."""
    dest = Path(to)
    if dest.exists():
        raise ArchiveError(f"{dest}: already exists (an archive is never overwritten)")
    try:
        src = sqlite3.connect(f"{Path(db).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ArchiveError(f"{db}: cannot be read: {exc}") from None
    try:
        c_seq, _ = _checkpoint_at_or_before(src, before)
        first = src.execute("SELECT MIN(seq) FROM records").fetchone()[0]
        if c_seq <= first:
            raise ArchiveError(
                f"{db}: starts at record {first} (pruned before it): no newer checkpoint record to archive up to"
            )
        pruned = src.execute(
            f"SELECT MAX(seq) FROM records WHERE kind = ? AND {KIND_INDEXED}", (PRUNED_KIND,)
        ).fetchone()[0]
        if first > 1 and pruned is not None and c_seq <= pruned:
            # The archive of a pruned journal proves its anchor with the journal_pruned record and the checkpoint
            # that signs it (verify.find_anchor): one ending before them could never verify.
            raise ArchiveError(
                f"{db}: the checkpoint record at or before {before} is record {c_seq}, before the last prune's"
                f" journal_pruned record {pruned}: an archive of a pruned journal ends at or after the checkpoint"
                f" that signs it (--before {pruned + 1} or later, or no --before)"
            )
        tmp = dest.with_name(f".{dest.name}.partial")
        tmp.unlink(missing_ok=True)
        out = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            out.execute(
                "CREATE TABLE records (seq INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL,"
                " data TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)"
            )
            out.execute("BEGIN")
            rows = src.execute(
                "SELECT seq, ts, kind, data, prev_hash, hash FROM records WHERE seq <= ? ORDER BY seq",
                (c_seq,),
            )
            out.executemany("INSERT INTO records VALUES (?,?,?,?,?,?)", rows)
            out.execute("COMMIT")
        finally:
            out.close()
    finally:
        src.close()
    try:
        done = verify_archive(tmp, public_key)
    except ArchiveError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    tmp.rename(dest)
    return Archived(
        dest, done.records, done.checkpoint_seq, done.checkpoint_ts, done.first_seq, done.checkpoint_hash
    )
