"""Issue 14 item 3 in the table's shell: a journal commit that fails is a fault at once and never a claim.

A real SQLite journal made to refuse growth (``PRAGMA max_page_count``: SQLITE_FULL, "database or disk is
full", exactly what a full disk gives) under the real TableController and core; the whole service on a real
full or read-only filesystem is in hil_tests/test_journal_disk.py (needs root).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.shell.controller import TableController
from controller.table import inputs
from controller.table.journal_io import DISK_FULL, READ_ONLY, JournalWriteFailed, classify, is_write_failure
from controller.table.messages import Publish
from drivers import events as ev


class FakeBoard:
    def __init__(self) -> None:
        self.values: dict[str, bool] = {}

    def safe_state(self) -> None:
        self.values.update(lid_lock=True, warning_light=True)

    def write(self, name: str, value: bool) -> None:
        self.values[name] = value

    def on_edge(self, name: str, cb: Any) -> None:
        pass


def _fill(journal: Journal) -> None:
    """No page more for the database: every commit that needs one fails with SQLITE_FULL."""
    pages = journal._conn.execute("PRAGMA page_count").fetchone()[0]
    journal._conn.execute(f"PRAGMA max_page_count = {pages}")
    for size in (3000, 1000, 300, 100, 30, 1):  # to the last byte of the last page
        with pytest.raises(sqlite3.OperationalError, match="full"):
            for _ in range(1000):
                with journal.transaction() as tx:
                    tx.append("filler", {"x": "x" * size})


async def _table(tmp_path: Path) -> tuple[TableController, Journal, FakeBoard, list[Publish]]:
    journal = Journal(tmp_path / "journal.db", table_id="T1")
    board = FakeBoard()
    sent: list[Publish] = []
    table = TableController(journal, board=board, unjournaled=sent.append)
    await table.start()
    await table.supervisor_action("ana", "unlock_lid")
    board.values.update(lid_lock=False, warning_light=False)
    return table, journal, board, sent


async def test_a_failed_commit_is_the_journal_io_fault_at_once_and_committed_once_the_journal_writes(
    tmp_path: Path,
) -> None:
    table, journal, board, sent = await _table(tmp_path)
    _fill(journal)
    before = journal.last_seq
    with pytest.raises(JournalWriteFailed, match="journal disk full") as failed:
        await table.supervisor_action("ana", "lock_lid")
    assert failed.value.problem.kind == DISK_FULL
    assert table.core.faults["journal_io"].kind == DISK_FULL
    assert board.values == {"lid_lock": True, "warning_light": True}  # at once, without the journal
    assert table.core.lid.unlock is None
    topics = {p.topic for p in sent}
    assert {"events/fault", "state/table"} <= topics  # published without the journal
    assert journal.last_seq == before  # nothing claimed

    # A shoe event now: not committed, no effect, the caller told so (the pump never acks it as committed).
    before_view = table.view()
    assert await table.handle_events([ev.CardOut("A", "S", 1, face_up=True)]) is False
    assert table.view() == before_view and table.uncommitted_events == 1
    with pytest.raises(JournalWriteFailed):  # refused with the reason, never silent
        await table.supervisor_action("ana", "clear_journal_io")

    journal._conn.execute("PRAGMA max_page_count = 1073741823")  # space again
    assert await table.retry_journal() is True
    inputs = [r.data["input"]["type"] for r in journal.records(after_seq=before, kinds=("input",))]
    assert inputs == ["journal_fault"]  # the fault itself is journaled, once
    await table.supervisor_action("ana", "clear_journal_io")
    assert "journal_io" not in table.core.faults
    assert journal.verify().ok
    await table.stop()
    journal.close()


async def test_recovery_restores_the_fault_committed_after_the_disk_came_back(tmp_path: Path) -> None:
    table, journal, _, _ = await _table(tmp_path)
    _fill(journal)
    with pytest.raises(JournalWriteFailed):
        await table.supervisor_action("ana", "lock_lid")
    journal._conn.execute("PRAGMA max_page_count = 1073741823")
    assert await table.retry_journal()
    await table.stop()
    journal.close()
    again = TableController(Journal(tmp_path / "journal.db", table_id="T1"))
    again.recover()
    assert "journal_io" in again.core.faults  # until a supervisor clears it
    again.journal.close()


def test_causes_are_named(tmp_path: Path) -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
    assert classify(full).text.startswith("journal disk full")
    ro = sqlite3.OperationalError("attempt to write a readonly database")
    ro.sqlite_errorname = "SQLITE_READONLY"  # type: ignore[attr-defined]
    assert classify(ro).kind == READ_ONLY
    assert classify(OSError(30, "Read-only file system")).kind == READ_ONLY
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorname = "SQLITE_BUSY"  # type: ignore[attr-defined]
    assert not is_write_failure(busy)  # another writer for a moment, not the disk
    assert not is_write_failure(sqlite3.IntegrityError("UNIQUE constraint failed"))  # a bug, not the disk


async def test_a_lid_switch_input_during_the_fault_is_held_and_applied_once_the_journal_writes(
    tmp_path: Path,
) -> None:
    """Sensor inputs cannot be sent again by anyone: held, then committed in order (never forgotten)."""
    import asyncio

    table, journal, _, _ = await _table(tmp_path)
    _fill(journal)
    with pytest.raises(JournalWriteFailed):
        await table.supervisor_action("ana", "lock_lid")
    assert await table.submit_or_hold(inputs.GpioInput("lid_switch", True)) is None
    before = journal.last_seq
    journal._conn.execute("PRAGMA max_page_count = 1073741823")
    assert await table.retry_journal()
    for _ in range(100):
        if any(r.kind == "lid_switch" for r in journal.records(after_seq=before)):
            break
        await asyncio.sleep(0.01)
    assert [r.data for r in journal.records(after_seq=before, kinds=("lid_switch",))] == [{"open": True}]
    await table.stop()
    journal.close()
