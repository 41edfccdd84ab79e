"""What the bench tests (hil_tests/) ask of a running rig (tablebench/bench/rig.py) and of its journal: one copy
each (they were copied into each test file that needed them)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.journal.store import Journal
from tablebench.bench.rig import Rig


def open_alert(view: Any, kind: str) -> dict[str, Any] | None:
    """The open alert of this kind in a table view, if there is one."""
    return next((a for a in view.alerts_open if a.get("kind") == kind), None)


def no_invalid_messages(rig: Rig) -> None:
    """Every message the bench's clients saw, unjournaled ones included, passed its schema (docs/mqtt.md)."""
    for client in (rig.monitor, rig.observer, rig.dealer, rig.supervisor):
        assert client.received.invalid == [], client.received.invalid


async def until(rig: Rig, pred: Callable[..., bool], what: str, timeout: float = 30.0) -> None:
    """Wait for the monitor to see ``pred`` hold; else fail naming ``what`` with the controller's last log lines."""
    try:
        await rig.monitor.wait_for(pred, timeout)
    except TimeoutError:
        raise AssertionError(f"{what}: not seen\n{rig.stack.controller_log(30)}") from None


def journal_rows(path: Path | str, kind: str) -> list[dict[str, Any]]:
    """Records of one kind read straight from the journal's file, read-only (the service may still run)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return [json.loads(d) for (d,) in conn.execute("SELECT data FROM records WHERE kind = ?", (kind,))]
    finally:
        conn.close()


def journal_records(rig: Rig, kind: str) -> list[dict[str, Any]]:
    """Records of one kind from the service's journal, through ``Journal`` (read after the service stopped)."""
    j = Journal(rig.journal_path, table_id=rig.bench.table_id)
    try:
        return [r.data for r in j.records(kinds=(kind,))]
    finally:
        j.close()
