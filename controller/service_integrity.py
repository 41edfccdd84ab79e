"""Integrity at start-up (issue 13 §1-2): a fault, never a crash, never a silent start.

The configuration and profile against the integrity manifest (``manifest_problems``: open_table is refused
while any remain), the journal's chain since the last signed checkpoint (``verify_journal``) and then the whole
of it in the background (``verify_whole_journal``), the snapshots, and the configuration pinned by the open
session (``pinned_problems``). Each failure is the table's ``integrity`` fault (``raise_integrity_fault``)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from controller.config import TableConfig
from controller.config.integrity import PROFILE_NAME, sha256_file
from controller.config.integrity import verify as verify_integrity
from controller.journal import Journal, VerifyResult
from controller.paste import command
from controller.table.controller import TableController
from controller.table.core import TableCore
from controller.table.effects import Rejected

log = logging.getLogger("tablectl.service")


def manifest_problems(config: TableConfig) -> list[str]:
    """The configuration and firmware profile against the recorded digests (the integrity manifest)."""
    manifest = config.table.integrity_manifest
    if not Path(manifest).exists():
        record = command("config", "record", config.path, "--manifest", manifest)
        return [f"integrity manifest {manifest} is missing (record it, once approved: {record})"]
    try:
        return verify_integrity(config.path, manifest)
    except Exception as exc:  # an unreadable manifest is a failed check, not a crash
        return [f"integrity manifest {manifest} unreadable: {exc}"]


def verify_journal(journal: Journal) -> VerifyResult:
    """The journal's start-up verification, behind one function: the journal helper's incremental
    ``Journal.verify_since_checkpoint()`` (same ``VerifyResult``; or ``JournalIntegrityError(seq, reason)``,
    handled by the caller): from the last signed checkpoint, so start-up does not grow with the journal
    (issue 13 §1, the integrity fault)."""
    return journal.verify_since_checkpoint()


def pinned_problems(core: TableCore, config: TableConfig) -> list[str]:
    """The open session's pinned digests against the files now (issue 13 §2: every load checks them)."""
    pinned = core.session.pinned
    if not core.session.id or core.state in ("closed", "deck_check_failed"):
        return []
    if not isinstance(pinned, dict):
        return []  # a session opened before pinning existed: nothing recorded to compare
    problems = []
    name = str(pinned.get("profile"))
    if not PROFILE_NAME.match(name):
        return [f"the session's pinned profile name {name[:64]!r} is not a profile name"]
    files = {
        "profile": (config.table.profile_path.parent / f"{name}.toml", pinned.get("profile_sha256")),
        "config": (Path(config.path), pinned.get("config_sha256")),
    }
    for role, (path, want) in files.items():
        try:
            now = sha256_file(path)
        except OSError as exc:
            problems.append(f"{role}: cannot read {path}: {exc.strerror or exc}")
            continue
        if now != want:
            problems.append(
                f"{role}: {path} differs from the digest pinned by session {core.session.id} "
                f"(pinned {str(want)[:16]}..., now {now[:16]}...)"
            )
    return problems


async def raise_integrity_fault(table: TableController, reason: str, details: dict[str, Any]) -> None:
    """The table's ``integrity`` fault, journaled (or logged when the journal cannot take it)."""
    log.critical("integrity fault: %s %s", reason, details)
    try:
        await table.submit({"type": "integrity_fault", "reason": reason, "details": details})
    except Rejected as exc:  # the journal cannot take it: the journal_io fault is raised instead
        log.critical("integrity fault not journaled: %s", exc.reason)


async def check_at_startup(table: TableController, journal: Journal, config: TableConfig) -> None:
    """After the table recovered: the chain since the last checkpoint, the snapshots, the pinned
    configuration."""
    try:
        result = verify_journal(journal)
    except Exception as exc:  # JournalIntegrityError(seq, reason), or an unreadable journal
        seq = getattr(exc, "seq", None)
        result = VerifyResult(False, 0, seq, str(getattr(exc, "reason", "") or exc))
    if not result.ok:
        where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else "the journal"
        await raise_integrity_fault(
            table,
            f"journal chain broken at {where}: {result.reason}",
            {"record": result.first_bad_seq, "check": "journal_chain"},
        )
    for problem in table.recovery_problems:
        await raise_integrity_fault(table, problem, {"check": "snapshot"})
    for bad in journal.integrity_problems:  # snapshots not restored: their digest is not chained
        await raise_integrity_fault(table, bad.reason, {"record": bad.seq, "check": "snapshot_chain"})
    problems = pinned_problems(table.core, config)
    if problems:
        await raise_integrity_fault(
            table,
            "the configuration differs from the one pinned when the open session began",
            {"check": "pinned_configuration", "problems": problems},
        )


async def verify_whole_journal(table: TableController, journal: Journal) -> None:
    """After start-up, the whole chain on a connection of its own (a thread): the start-up check covers only
    the records since the last signed checkpoint, so an old record edited while the service was stopped is
    found here, seconds later, and is the same ``integrity`` fault (issue 13 §1)."""
    try:
        result = await asyncio.to_thread(Journal.verify_file, journal.path, journal.audit_public_key)
    except Exception as exc:  # an unreadable file is a failed check, not a crash
        result = VerifyResult(False, 0, None, f"cannot read the journal: {exc}")
    if not result.ok:
        where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else "the journal"
        await raise_integrity_fault(
            table,
            f"journal chain broken at {where}: {result.reason}",
            {"record": result.first_bad_seq, "check": "journal_chain_full"},
        )
    else:
        log.info("journal: the whole chain verified (%d records)", result.records)
