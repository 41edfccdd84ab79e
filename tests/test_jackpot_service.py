"""The jackpot in the real service (PT-2001 r.38-50): real broker, emulated shoe and jackpot sign on ptys, the
service (`tablectl run`) as a subprocess, driven like a real table: dealer and supervisor commands over MQTT,
the shoe through the emulator's control socket, the chip slots through the fake GPIO socket.

Shows: the sign increments with each collection and shows WIN on a hit; kill -9 during a collection,
during the decision that freezes a hit and during its payment, restart, and the meter reconciles exactly
with the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.client import CommandFailed, TableClient
from controller.jackpot.meter import UNIT
from controller.journal.store import Journal
from tablebench import gpio_server
from tablebench.emulator.control_client import ControlClient
from tablebench.emulator.scenario import ScenarioError, parse_scenario
from tablebench.stack import DEMO_PINS, Stack, StackOptions

pytestmark = [
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto"),
    pytest.mark.timeout(120),
]

BET, INC_BP, SEED = 100, 7000, 1_000_000  # firmware_configs/demo.toml [jackpot]
SUP, PIN = "alice", DEMO_PINS["alice"]


def scenario() -> dict[str, Any]:
    """A continuous 6-deck shoe; empty at start when the emulator supports it (`start_empty`)."""
    base = {"kind": "continuous", "decks": 6, "seed": 11}
    try:
        parse_scenario({**base, "start_empty": True})
    except ScenarioError:
        return base
    return {**base, "start_empty": True}


class Table:
    def __init__(self, stack: Stack, dealer: TableClient, sup: TableClient, ctl: ControlClient) -> None:
        self.stack, self.dealer, self.sup, self.ctl = stack, dealer, sup, ctl

    def state(self, name: str) -> dict[str, Any]:
        return self.dealer.view.states.get(name, {})

    async def until(self, pred, what: str, timeout: float = 30.0) -> None:
        try:
            await self.dealer.wait_for(lambda _v: pred(), timeout)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}\n{self.stack.controller_log()}") from None

    async def shown(self, text: str, timeout: float = 30.0) -> None:
        """The emulated sign showed ``text`` (its log: `SHOW <text>` per text shown)."""
        log = self.stack.workdir / "display.log"
        for _ in range(int(timeout / 0.05)):
            if f"SHOW {text}" in log.read_text(errors="replace").splitlines():
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"the sign never showed {text!r}: {log.read_text()[-600:]}")

    async def chip(self, seat: int) -> None:
        """A chip into the slot (first the slot empty again: the dealer took the last one, PT-2001 r.41a)."""
        for present in (False, True):
            reply = await gpio_server.call(
                self.stack.gpio_socket, "set", name=f"chip_slot_{seat}", value=present
            )
            assert reply["ok"], reply
        await self.until(
            lambda: seat in self.state("jackpot").get("chips_sensed", []), f"chip on seat {seat}"
        )

    async def load(self) -> None:
        """open_table, the cards in through the window in two packets (PT-2001 r.53-54). Without the
        emulator's `start_empty` the shoe starts full: all cards are drawn out first."""
        total = 6 * 52
        inside = int((await self.ctl.state())["cards_inside"])
        if inside:
            await self.ctl.draw(inside)
            await self.until(lambda: self.state("shoe").get("cards_out") == inside, "all cards out")
        await self.sup.supervisor(SUP, PIN, "open_table", profile="pt-2001", shuffler="continuous")
        await self.until(lambda: self.state("lid").get("state") == "open", "lid open for loading")
        await self.ctl.insert(total // 2)
        await self.ctl.insert(total - total // 2)
        await self.ctl.close_lid()
        await self.until(lambda: self.state("table").get("state") == "betting", "table open", 30)

    async def draw(self, *cards: str) -> None:
        """These cards come out next (the emulator's queue), as the dealer draws them."""
        await self.ctl.queue(list(cards))
        seq = self.state("shoe").get("cards_out", 0)
        await self.ctl.draw(len(cards))
        await self.until(lambda: self.state("shoe").get("cards_out", 0) >= seq + len(cards), "cards dealt")

    async def finish_round(self) -> None:
        """Stand, let the dealer draw (ten-value cards, no ace: no accidental jackpot), cards back in."""
        tens = iter([r + s for r in "TJQK" for s in "SHDC"])
        while self.state("table").get("state") in ("players", "dealer", "dealing"):
            rnd = self.state("round")
            allowed = rnd.get("allowed_actions", [])
            if "stand" in allowed:
                turn = rnd.get("turn") or {}
                await self.dealer.dealer("stand")
                await self.until(lambda t=turn: (self.state("round").get("turn") or {}) != t, "turn moved")
            elif "decline_insurance" in allowed:
                await self.dealer.dealer("decline_insurance")
            else:
                await self.draw(next(tens))
        await self.until(lambda: self.state("lid").get("state") == "open", "automatic lid opening")
        await self.ctl.insert()
        await self.until(lambda: self.state("table").get("state") == "cards_returned", "cards returned")
        await self.ctl.close_lid()
        await self.until(lambda: self.state("lid").get("state") == "locked", "lid locked")
        await self.dealer.dealer("next_round")
        await self.until(lambda: self.state("table").get("state") == "betting", "betting")

    async def kill_during(self, command: Any, after: float) -> None:
        """Send a command and kill -9 the service ``after`` seconds later, whatever it is doing."""
        task = asyncio.ensure_future(command)
        await asyncio.sleep(after)
        await asyncio.to_thread(self.stack.kill_controller)
        task.cancel()
        with contextlib.suppress(BaseException):
            await task

    async def restart(self) -> None:
        """Start the service again; only documents the new process committed count. The old process's
        unacknowledged rows are resent from the outbox first (nothing lost), so a state it reported before
        the kill can arrive after the restart: its event_id is at most the journal's last one at the kill."""
        killed_at = await asyncio.to_thread(_last_event_id, self.stack.workdir / "state" / "journal.db")
        self.dealer.view.states.clear()
        self.dealer.view.status = "unknown"
        self.stack.start_controller()
        await self.until(lambda: self.dealer.view.status == "online", "service back online", 30)

        def resumed() -> bool:
            fresh = self.dealer.view.state_ids.get("table", 0) > killed_at
            return fresh and self.state("table").get("state") in ("betting", "dealing", "players", "settled")

        await self.until(resumed, "resumed", 20)
        await self.until(lambda: self.state("jackpot").get("display_connected") is True, "sign connected", 20)


def _last_event_id(journal_path: Path) -> int:
    j = Journal(journal_path)
    try:
        return j.last_event_id
    finally:
        j.close()


@contextlib.asynccontextmanager
async def running(tmp_path: Path, config: dict[str, Any] | None = None) -> AsyncIterator[Table]:
    stack = Stack(tmp_path / "stack", StackOptions(scenario=scenario(), config_overrides=config or {}))
    await asyncio.to_thread(stack.start)
    dealer = stack.client("dealer")
    sup = stack.client("supervisor1")
    ctl: ControlClient | None = None
    try:
        await dealer.connect()
        await sup.connect()
        ctl = await ControlClient.connect(stack.shoe_control)
        t = Table(stack, dealer, sup, ctl)
        await t.until(lambda: dealer.view.status == "online", "service online", 30)
        yield t
    finally:
        if ctl is not None:
            await ctl.close()
        await dealer.close()
        await sup.close()
        await asyncio.to_thread(stack.stop)


def reconcile(journal_path: Path) -> tuple[int, dict[str, int]]:
    """Rebuild the meter from the journal alone; check each record against its predecessor and the
    contributions against the rounds that were started. Returns (meter_units, totals)."""
    j = Journal(journal_path)
    try:
        meter: int | None = None
        totals = {"contributed": 0, "paid": 0, "seeded": 0, "reserve": 0, "corrections": 0, "rounds_chips": 0}
        for rec in j.records(kinds=("jackpot", "round_started")):
            d = rec.data
            if rec.kind == "round_started":
                totals["rounds_chips"] += len(d["jackpot_chips"])
                continue
            kind = d["kind"]
            if kind == "seed":
                assert meter is None
                meter = d["meter_units"]
                totals["seeded"] += meter
                continue
            assert meter is not None
            delta = {
                "contribute": d.get("to_meter_units", 0),
                "pay": -d.get("amount", 0) * UNIT,
                "reset": d.get("seed", 0) * UNIT + d.get("reserve_units", 0),
                "correct": d.get("delta_units", 0),
            }.get(kind, 0)
            totals["contributed"] += d.get("to_meter_units", 0) if kind == "contribute" else 0
            totals["paid"] += d.get("amount", 0) if kind == "pay" else 0
            totals["seeded"] += d.get("seed", 0) * UNIT if kind == "reset" else 0
            totals["reserve"] += d.get("reserve_units", 0) if kind == "reset" else 0
            totals["corrections"] += d.get("delta_units", 0) if kind == "correct" else 0
            meter += delta
            assert d["meter_units"] == meter, f"journal record {rec.seq} ({kind}) does not follow: {d}"
        assert meter is not None
        # Every collected chip is on the meter, exactly once (PT-2001 r.41): the rounds say how many.
        assert totals["contributed"] == totals["rounds_chips"] * BET * INC_BP
        assert meter == (
            totals["seeded"]
            + totals["contributed"]
            + totals["reserve"]
            - totals["paid"] * UNIT
            + totals["corrections"]
        )
        return meter, totals
    finally:
        j.close()


# kill -9 right away (most often before the commit) and a little later (most often after it): either way the
# meter must reconcile; which one happened is read back from the journal, never assumed.
@pytest.mark.parametrize("kill_after", [0.0, 0.3])
async def test_sign_increments_shows_win_and_meter_survives_kill_9(tmp_path: Path, kill_after: float) -> None:
    """PT-2001 r.41 (the sign increments), r.49 (hit pending until verified and paid), r.50; kill -9 twice."""
    async with running(tmp_path) as t:
        journal = t.stack.workdir / "state" / "journal.db"
        await t.until(lambda: t.state("jackpot").get("display_connected") is True, "sign connected")
        await t.load()
        await t.shown("JACKPOT EUR 10,000.00")  # the seed (PT-2001 r.44)
        assert t.state("jackpot")["playable"] is True

        # Round 1: two chips sensed by the slots, collected at no more bets: the sign increments.
        for seat in (1, 3):
            await t.dealer.dealer("place_bet", seat=seat, amount=500)
            await t.chip(seat)
        await t.dealer.dealer("no_more_bets")
        await t.until(lambda: t.state("jackpot").get("meter") == SEED + 140, "meter incremented")
        await t.shown("JACKPOT EUR 10,001.40")
        await t.finish_round()

        # Round 2: kill -9 while the collection is being committed.
        await t.dealer.dealer("place_bet", seat=2, amount=500)
        await t.chip(2)
        await t.kill_during(t.dealer.dealer("no_more_bets"), kill_after)
        await t.restart()
        units, totals = await asyncio.to_thread(reconcile, journal)
        assert t.state("jackpot")["meter"] == units // UNIT
        assert totals["rounds_chips"] in (2, 3)  # committed with its round, or not at all
        if t.state("table")["state"] == "betting":  # the round never started: collect now
            if 2 not in t.state("jackpot")["chips_sensed"]:
                await t.chip(2)
            try:
                await t.dealer.dealer("no_more_bets")
            except CommandFailed as exc:  # the broker redelivered the first one: the round started meanwhile
                assert "not allowed in state" in exc.reason, exc.reason
        await t.until(lambda: t.state("jackpot").get("meter") == SEED + 210, "third chip on the meter")
        await t.shown("JACKPOT EUR 10,002.10")
        await t.until(lambda: t.state("table").get("state") == "dealing", "dealing", 20)
        await t.finish_round()

        # Round 3: seat 1 is dealt two aces of different suits (25 x, PT-2001 r.43e).
        for seat in (1, 3):
            await t.dealer.dealer("place_bet", seat=seat, amount=500)
        await t.chip(1)
        await t.dealer.dealer("no_more_bets")
        await t.until(lambda: t.state("jackpot").get("meter") == SEED + 280, "fourth chip")
        await t.draw("AH", "8D", "9S", "AS", "9D", "7D")
        await t.until(lambda: (t.state("round").get("turn") or {}).get("seat") == 1, "seat 1 to play")
        # kill -9 while the stand that decides the hit (r.42: no third card) is being committed.
        await t.kill_during(t.dealer.dealer("stand"), kill_after)
        await t.restart()
        units, _ = await asyncio.to_thread(reconcile, journal)
        assert t.state("jackpot")["meter"] == units // UNIT == SEED + 280
        if not t.state("jackpot")["pending_hits"]:  # the stand did not commit: seat 1 stands now
            await t.until(lambda: (t.state("round").get("turn") or {}).get("seat") == 1, "seat 1 to play")
            await t.dealer.dealer("stand")
        await t.until(lambda: len(t.state("jackpot").get("pending_hits", [])) == 1, "hit pending")
        (hit,) = t.state("jackpot")["pending_hits"]
        assert (hit["seat"], hit["combination"], hit["amount"]) == (1, "TWO_ACES_MIXED", 25 * BET)
        assert t.state("round")["jackpot_hits"][0]["hit_id"] == hit["hit_id"]  # r.49: the hand is flagged
        await t.shown("WIN SEAT 1 EUR 25.00")
        await t.finish_round()
        await t.sup.supervisor(SUP, PIN, "jackpot_verify", hit_id=hit["hit_id"])

        # kill -9 while the payment is being committed.
        await t.kill_during(t.sup.supervisor(SUP, PIN, "jackpot_pay", hit_id=hit["hit_id"]), kill_after)
        await t.restart()
        units, totals = await asyncio.to_thread(reconcile, journal)
        assert t.state("jackpot")["meter"] == units // UNIT
        if t.state("jackpot")["pending_hits"]:  # the payment did not commit: pay it now
            assert totals["paid"] == 0
            try:
                await t.sup.supervisor(SUP, PIN, "jackpot_pay", hit_id=hit["hit_id"])
            except CommandFailed as exc:  # the broker redelivered the first one: paid meanwhile
                assert "no pending jackpot hit" in exc.reason, exc.reason
        await t.until(lambda: t.state("jackpot").get("pending_hits") == [], "hit paid")
        await t.until(lambda: t.state("jackpot").get("meter") == SEED + 280 - 25 * BET, "paid from the meter")
        await t.shown("JACKPOT EUR 9,977.80")
        assert t.state("jackpot")["playable"] is True

    units, totals = reconcile(journal)
    assert units == SEED * UNIT + 4 * BET * INC_BP - 25 * BET * UNIT
    assert totals["paid"] == 25 * BET and totals["rounds_chips"] == 4


async def test_a_correction_needs_a_second_supervisor_and_stays_within_bounds(tmp_path: Path) -> None:
    """The attack of issue 27: one supervisor's signed jackpot_correct to 10**20, then to 2**63, was the meter.
    Now: refused out of range, below the seed (PT-2001 r.44), beyond the configured maximum change; a correction
    in bounds changes nothing until a second, different supervisor confirms it; then both names, the reason, old
    and new meter are in the journal and a critical alert is on the broker (bridged to the floor)."""
    bob, bob_pin = "bob", DEMO_PINS["bob"]
    async with running(tmp_path) as t:
        journal = t.stack.workdir / "state" / "journal.db"
        await t.until(lambda: t.state("jackpot").get("display_connected") is True, "sign connected")
        await t.load()
        for value, why in (
            (10**20, "value"),
            (2**63, "value"),
            (SEED - 1, "below the seed"),
            (SEED * 3, "maximum"),
        ):
            with pytest.raises(CommandFailed, match=why):
                await t.sup.supervisor(SUP, PIN, "jackpot_correct", value=value, reason="attack")
        assert t.state("jackpot")["meter"] == SEED
        answer = await t.sup.supervisor(
            SUP, PIN, "jackpot_correct", value=SEED + 5000, reason="restored from log"
        )
        cid = answer["result"]["correction_id"]
        await t.until(lambda: "pending_correction" in t.state("jackpot"), "pending correction shown")
        assert t.state("jackpot")["meter"] == SEED  # one supervisor alone changes nothing
        with pytest.raises(CommandFailed, match="different supervisor"):
            await t.sup.supervisor(SUP, PIN, "jackpot_correct_confirm", correction_id=cid)
        await t.sup.supervisor(bob, bob_pin, "jackpot_correct_confirm", correction_id=cid)
        await t.until(lambda: t.state("jackpot").get("meter") == SEED + 5000, "meter corrected")
        await t.shown("JACKPOT EUR 10,050.00")
        await t.until(
            lambda: any(
                a.get("kind") == "jackpot_correction" and a.get("severity") == "critical"
                for a in t.dealer.view.alerts_open
            ),
            "critical jackpot_correction alert on the broker",
        )
    units, totals = reconcile(journal)
    assert units == (SEED + 5000) * UNIT and totals["corrections"] == 5000 * UNIT
    j = Journal(journal)
    try:
        (rec,) = [r.data for r in j.records(kinds=("jackpot",)) if r.data["kind"] == "correct"]
    finally:
        j.close()
    assert (rec["who"], rec["confirmed_by"], rec["reason"]) == (SUP, bob, "restored from log")
    assert (rec["old_units"], rec["new_units"]) == (SEED * UNIT, (SEED + 5000) * UNIT)
