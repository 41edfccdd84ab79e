"""Only verified data becomes live state (issue 27 §2), against the real service (pty shoe, mosquitto, SQLite).

The attack: with the table stopped, the newest snapshot's jackpot meter x10 (its totals adjusted so the meter's
own invariants hold), its chained digest replaced and every hash after it recomputed. Before, the integrity
fault was raised yet the forged meter was live and survived a restart, clear_integrity and open_table. Now the
state comes from the last snapshot and records covered by a valid signed checkpoint (and the meter always equals
what the journal's chained meter records add up to), the integrity fault says so, and nothing forged is ever
promoted into a new session."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_jackpot_service import BET, INC_BP, PIN, SEED, SUP, Table, reconcile, running

from controller.jackpot.meter import UNIT
from controller.journal.records import text_digest
from controller.journal.store import chain_hash
from controller.service.integrity import WHOLE_CHECK_DONE

pytestmark = [
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto"),
    pytest.mark.timeout(180),
]


def forge_newest_snapshot(db: Path, factor: int = 10) -> int:
    """The attack. Returns the forged snapshot's seq."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("DROP TRIGGER IF EXISTS records_no_update")
        seq, text = conn.execute("SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
        state = json.loads(text)
        meter = state["jackpot"]["meter"]
        extra = meter["meter_units"] * (factor - 1)
        meter["meter_units"] += extra
        meter["contributed_units"] += extra  # the meter's own invariant still holds
        forged = json.dumps(state, sort_keys=True, separators=(",", ":"))
        conn.execute("UPDATE snapshots SET state = ? WHERE seq = ?", (forged, seq))
        data = json.loads(conn.execute("SELECT data FROM records WHERE seq = ?", (seq + 1,)).fetchone()[0])
        data["sha256"] = text_digest(forged)
        conn.execute(
            "UPDATE records SET data = ? WHERE seq = ?",
            (json.dumps(data, sort_keys=True, separators=(",", ":")), seq + 1),
        )
        prev = conn.execute("SELECT hash FROM records WHERE seq = ?", (seq,)).fetchone()[0]
        for r_seq, ts, kind, rdata in conn.execute(
            "SELECT seq, ts, kind, data FROM records WHERE seq > ? ORDER BY seq", (seq,)
        ).fetchall():
            h = chain_hash(prev, r_seq, ts, kind, rdata)
            conn.execute("UPDATE records SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, h, r_seq))
            prev = h
        conn.commit()
        return seq
    finally:
        conn.close()


async def restart(t: Table) -> None:
    await asyncio.to_thread(t.stack.stop_controller)
    t.dealer.view.states.clear()
    t.dealer.view.status = "unknown"
    t.stack.start_controller()
    await t.until(lambda: t.dealer.view.status == "online", "service back online", 30)
    await t.until(lambda: t.state("jackpot").get("meter") is not None, "jackpot state", 30)
    await t.until(lambda: t.state("table").get("state") is not None, "table state", 30)


def integrity_alert(t: Table) -> dict[str, Any] | None:
    return next((a for a in t.dealer.view.alerts_open if a.get("kind") == "integrity"), None)


def checkpointed(db: Path) -> bool:
    """The newest record is a checkpoint record: everything before it is covered by a signed checkpoint."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT kind FROM records ORDER BY seq DESC LIMIT 1").fetchone()
        return bool(row) and row[0] == "checkpoint"
    finally:
        conn.close()


async def test_a_forged_snapshot_never_becomes_live_state(tmp_path: Path) -> None:
    async with running(tmp_path, {"audit": {"checkpoint_interval_s": 1}}) as t:
        db = t.stack.workdir / "state" / "journal.db"
        await t.until(lambda: t.state("jackpot").get("display_connected") is True, "sign connected")
        await t.load()
        for seat in (1, 3):
            await t.dealer.dealer("place_bet", seat=seat, amount=500)
            await t.chip(seat)
        await t.dealer.dealer("no_more_bets")
        honest = SEED + 2 * BET * INC_BP // UNIT
        await t.until(lambda: t.state("jackpot").get("meter") == honest, "meter incremented")
        await t.finish_round()
        await t.sup.supervisor(SUP, PIN, "close_table")
        await t.until(lambda: t.state("table").get("state") == "closed", "table closed", 30)
        for _ in range(200):  # the 1 s cadence signs the head
            if await asyncio.to_thread(checkpointed, db):
                break
            await asyncio.sleep(0.05)
        assert await asyncio.to_thread(t.stack.stop_controller) == 0  # an orderly stop saves a snapshot

        await asyncio.to_thread(forge_newest_snapshot, db)
        t.dealer.view.states.clear()
        t.dealer.view.status = "unknown"
        t.stack.start_controller()
        await t.until(lambda: t.dealer.view.status == "online", "service back online", 30)
        await t.until(lambda: integrity_alert(t) is not None, "the integrity fault's alert", 30)
        await t.until(lambda: t.state("jackpot").get("meter") is not None, "jackpot state", 30)
        assert t.state("jackpot")["meter"] == honest, t.stack.controller_log()
        units, _ = await asyncio.to_thread(reconcile, db)
        assert units // UNIT == honest  # what the chained meter records add up to

        # every start logs the end of its whole-chain check: this start's (the second: running()'s, then this one)
        # first, else on a slow machine its line, written after the count below, is taken for the next start's
        await t.until(
            lambda: t.stack.log_path.read_text(errors="replace").count(WHOLE_CHECK_DONE) >= 2,
            "the whole-chain check of the start after the forgery done",
            60,
        )
        checks_done = t.stack.log_path.read_text(errors="replace").count(WHOLE_CHECK_DONE)
        await restart(t)  # the forged snapshot is still in the file: never restored
        assert t.state("jackpot")["meter"] == honest
        assert t.state("table")["state"] == "closed"
        await t.until(
            lambda: "integrity" in (t.state("table").get("faults") or []), "the integrity fault", 30
        )
        # the whole-chain check in the background finds the same break: a clear before it is done would be
        # undone by it (open_table was refused on it), so the table refuses it until then
        await t.until(
            lambda: t.stack.log_path.read_text(errors="replace").count(WHOLE_CHECK_DONE) > checks_done,
            "this start's whole-chain check done",
            60,
        )
        await t.sup.supervisor(SUP, PIN, "clear_integrity")
        await t.load()
        assert t.state("jackpot")["meter"] == honest  # nothing forged promoted into the new session
        await restart(t)
        assert t.state("jackpot")["meter"] == honest
