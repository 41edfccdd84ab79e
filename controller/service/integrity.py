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
from controller.effects import Rejected
from controller.jackpot.meter import UNIT
from controller.journal import Journal, VerifyResult
from controller.journal.checkpointer import Checkpointer
from controller.paste import command
from controller.shell.controller import TableController
from controller.table import inputs
from controller.table.core import TableCore
from controller.table.machine_names import TableState

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
    if not core.session.id or core.state in (TableState.CLOSED, TableState.DECK_CHECK_FAILED):
        return []
    if not isinstance(pinned, dict):
        return []  # a session opened before pinning existed: nothing recorded to compare
    problems = []
    name = str(pinned.get("profile"))
    if not PROFILE_NAME.fullmatch(name):
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
        await table.submit(inputs.IntegrityFault(reason, details))
    except Rejected as exc:  # the journal cannot take it: the journal_io fault is raised instead
        log.critical("integrity fault not journaled: %s", exc.reason)


def verify_before_recovery(journal: Journal) -> tuple[VerifyResult, int | None]:
    """Before the table recovers: the start-up verification, and where the state must stop when it fails
    (issue 27 §2: only records covered by a valid signed checkpoint become live state; None: all of them)."""
    try:
        result = verify_journal(journal)
    except Exception as exc:  # JournalIntegrityError(seq, reason), or an unreadable journal
        seq = getattr(exc, "seq", None)
        result = VerifyResult(False, 0, seq, str(getattr(exc, "reason", "") or exc))
    if result.ok:
        return result, None
    try:
        until = journal.trusted_until()
    except Exception as exc:  # an unreadable journal: nothing of it is verified
        log.critical("journal: no verified part found (%s)", exc)
        until = 0
    log.critical("journal: state recovered only up to record %d, covered by a signed checkpoint", until)
    return result, until


def meter_problem(table: TableController, journal: Journal) -> str | None:
    """The jackpot meter restored must be the one the chained meter records add up to: the newest ``jackpot``
    record (each carries the meter after it) in the part of the journal the state came from."""
    units = table.core.jackpot.meter_units()
    rec = journal.last_record("jackpot", table.recovered_until)
    if units is None or rec is None or not isinstance(rec.data.get("meter_units"), int):
        return None
    if rec.data["meter_units"] == units:
        return None
    return (
        f"the restored jackpot meter ({units // UNIT} minor units) differs from the journal's meter records "
        f"({rec.data['meter_units'] // UNIT}, record {rec.seq})"
    )


async def check_at_startup(
    table: TableController, journal: Journal, config: TableConfig, result: VerifyResult
) -> bool:
    """After the table recovered: the jackpot meter against its records, the chain since the last checkpoint,
    the snapshots, the pinned configuration. True: the state left records out (the caller saves it)."""
    limited = table.recovered_until is not None
    problem = meter_problem(table, journal)
    if (
        problem is not None
    ):  # the newest snapshot contradicts the records: an older one and the inputs after it
        snap = journal.latest_snapshot(
            before_seq=table.recovered_until + 1 if table.recovered_until is not None else None
        )
        table.recover(table.recovered_until, before_snapshot=snap[0] if snap else 0)
        if table.recovered_until is not None:  # the restart input journaled after the verified part
            await table.submit(inputs.Restart())
        await raise_integrity_fault(table, problem, {"check": "jackpot_meter"})
        limited = True
    # Every problem the journal showed at start, as ONE integrity fault: the cause (the break) first, then what
    # the recovery did about it and the snapshots set aside. Raised one by one, a supervisor's clear_integrity
    # could land between two of them and the next raised the fault again (open_table then refused).
    found: list[tuple[str, dict[str, Any]]] = []
    if not result.ok:
        where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else "the journal"
        found.append((f"journal chain broken at {where}: {result.reason}",
                      {"record": result.first_bad_seq, "check": "journal_chain"}))  # fmt: skip
    if table.recovered_until is not None:
        found.append((
            f"state recovered from the verified journal only: up to record {table.recovered_until}, the last "
            "one covered by a valid signed checkpoint; nothing after it was restored",
            {"record": table.recovered_until, "check": "verified_recovery"},
        ))  # fmt: skip
    found += [(problem, {"check": "snapshot"}) for problem in table.recovery_problems]
    found += [
        (bad.reason, {"record": bad.seq, "check": "snapshot_chain"}) for bad in journal.integrity_problems
    ]
    if found:
        details = dict(found[0][1]) | ({"also": [d for _, d in found[1:]]} if len(found) > 1 else {})
        await raise_integrity_fault(table, "; ".join(reason for reason, _ in found), details)
    problems = pinned_problems(table.core, config)
    if problems:
        await raise_integrity_fault(
            table,
            "the configuration differs from the one pinned when the open session began",
            {"check": "pinned_configuration", "problems": problems},
        )
    return limited or bool(table.recovery_problems)


async def recover_verified(
    table: TableController, journal: Journal, config: TableConfig, checkpointer: Checkpointer
) -> VerifyResult:
    """Start the table from the verified part of its journal (the chain since the last signed checkpoint first:
    when it is broken only what a valid signed checkpoint covers becomes state, issue 27 §2), then the
    start-up checks; a state that left records out is signed and saved, so the next start restores it."""
    verified, until = verify_before_recovery(journal)
    await table.start(until)  # recover from the journal, re-assert safe outputs
    if await check_at_startup(table, journal, config, verified):
        try:
            checkpointer.write()
        except Exception as exc:  # the journal_io fault's to raise; the next start limits it again
            log.critical("checkpoint after a limited recovery not written: %s", exc)
        table.snapshot_now()
    return verified


async def verify_whole_journal(
    table: TableController, journal: Journal, breaks_raised: set[int] | None = None
) -> None:
    """After start-up, the whole chain on a connection of its own (a thread): the start-up check covers only
    the records since the last signed checkpoint, so an old record edited while the service was stopped is
    found here, seconds later, and is the same ``integrity`` fault (issue 13 §1)."""
    try:
        result = await asyncio.to_thread(Journal.verify_file, journal.path, journal.audit_public_key)
    except Exception as exc:  # an unreadable file is a failed check, not a crash
        result = VerifyResult(False, 0, None, f"cannot read the journal: {exc}")
    raised = breaks_raised if breaks_raised is not None else set()
    if not result.ok and result.first_bad_seq in raised:
        # the break this start already raised (the start-up check, the broker's checkpoint): raised again here,
        # seconds later, it re-opened the fault a supervisor may have looked into and cleared
        log.critical(
            "journal: the whole chain breaks where this start already raised (record %s)",
            result.first_bad_seq,
        )
    elif not result.ok:
        if result.first_bad_seq is not None:
            raised.add(result.first_bad_seq)
        where = f"record {result.first_bad_seq}" if result.first_bad_seq is not None else "the journal"
        await raise_integrity_fault(
            table,
            f"journal chain broken at {where}: {result.reason}",
            {"record": result.first_bad_seq, "check": "journal_chain_full"},
        )
    else:
        log.info("journal: the whole chain verified (%d records)", result.records)
    log.info("journal: %s", WHOLE_CHECK_DONE)


# The log line that ends the whole-chain check, every start (what the bench and the tests wait for).
WHOLE_CHECK_DONE = "whole-chain check done"
