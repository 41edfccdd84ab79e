"""The table controller against the emulated shoe on a real pty, a real SQLite journal and a fake GPIO
board: full sessions per profile family and the faults (PT-2001 r.8-11, r.51-62; MO-2004 art.2, art.4)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.pty_shoe import shoe_on_pty

from controller.gpio import FakeBoard, PinSpec
from controller.journal.export import export_session
from controller.journal.store import Journal
from controller.rules.rounds import replay
from controller.shell import TableController
from controller.table import LogAlerts, Rejected
from drivers.shoe import ShoeDriver
from tablebench.emulator.control_client import ControlClient

pytestmark = pytest.mark.timeout(120)

PINS = [
    PinSpec("lid_lock", 17, output=True, safe_value=True),
    PinSpec("warning_light", 27, output=True, safe_value=True),
    PinSpec("lid_switch", 22, output=False),
    PinSpec("button_hit", 5, output=False),
    PinSpec("button_stand", 6, output=False),
    PinSpec("button_insurance", 16, output=False),
    PinSpec("button_even_money", 20, output=False),
]


@dataclass
class Table:
    tc: TableController
    driver: ShoeDriver
    ctl: ControlClient
    board: FakeBoard
    journal: Journal
    alerts: LogAlerts

    @property
    def state(self) -> str:
        return self.tc.core.state

    async def until(self, cond: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
        """Wait for the controller to process what the emulator sent (a generous bound, no timing check)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not cond():
            if loop.time() > end:
                raise AssertionError(
                    f"timed out waiting for {what}; state {self.state}, view {self.tc.view()}"
                )
            await asyncio.sleep(0.01)

    async def draw(self, n: int = 1) -> None:
        seen = self.tc.core.shoe.last_seq
        await self.ctl.draw(n)
        await self.until(lambda: self.tc.core.shoe.last_seq >= seen + n, f"{n} card(s)")

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [r.data for r in self.journal.records(kinds=(kind,))]

    def alert_kinds(self) -> list[str]:
        return [a[0] for a in self.alerts.raised]

    async def load_continuous(self, profile: str = "pt-2001") -> None:
        """The emulator starts full; for a real loading (PT-2001 r.53-54) the cards come out first, then go in
        again in two packets with the chief inspector who opened the table."""
        total = int((await self.ctl.state())["cards_inside"])
        await self.ctl.draw(total)
        await self.until(lambda: len(self.kinds("card_out_while_closed")) == total, "all cards out")
        await self.tc.supervisor_action(
            "chief-ana", "open_table", {"profile": profile, "shuffler": "continuous"}
        )
        await self.until(lambda: self.tc.core.lid.state == "open", "lid open for loading")
        await self.ctl.insert(total // 2)
        await self.ctl.insert(total - total // 2)
        await self.ctl.close_lid()
        await self.until(lambda: self.state == "betting", "table open")
        assert self.tc.core.session.packets == 2

    async def play_round(self, seats: dict[int, int]) -> str:
        """Bets, then draw whenever a card is expected and stand (or hit when standing is refused)."""
        for seat, amount in seats.items():
            await self.tc.dealer_input("place_bet", {"seat": seat, "amount": amount})
        rid = (await self.tc.dealer_input("no_more_bets"))["round_id"]
        while self.state in ("dealing", "players", "dealer"):
            engine = self.tc.core.round.engine
            if engine.expected_recipient() is not None:
                await self.draw(1)
                continue
            allowed = {str(a) for a in engine.allowed_actions()}
            action = next(a for a in ("no_insurance", "stand", "hit") if a in allowed)
            await self.tc.dealer_input("decline_insurance" if action == "no_insurance" else action)
        return rid

    async def lid_cycle(self) -> None:
        await self.until(lambda: self.tc.core.lid.state == "open", "automatic lid opening")
        await self.ctl.insert()
        await self.until(lambda: self.state == "cards_returned", "cards returned")
        await self.ctl.close_lid()
        await self.until(lambda: self.tc.core.lid.state == "locked", "lid locked")


@asynccontextmanager
async def table(
    tmp_path: Path, scenario: dict[str, Any], *, link_up_seen: bool = True
) -> AsyncIterator[Table]:
    """``link_up_seen=False``: the shoe's identification and link-up reach the table, as in the service."""
    async with shoe_on_pty(scenario, tmp_path, wait_link_up=link_up_seen) as (driver, ctl):
        journal = Journal(tmp_path / "journal.db", table_id="T1")
        board = FakeBoard()
        board.setup(PINS)
        alerts = LogAlerts()
        tc = TableController(journal, driver, board=board, alerts=alerts, snapshot_every=25)
        await tc.start()
        try:
            yield Table(tc, driver, ctl, board, journal, alerts)
        finally:
            await tc.stop()
            journal.close()


CONTINUOUS = {"kind": "continuous", "decks": 6, "seed": 7}


async def test_continuous_session_full_cycle_pt2001(tmp_path: Path) -> None:
    """Loading in two packets (r.53-54), rounds with the automatic lid cycle (r.59-60), contestable until the
    cards go in (r.62), closing with the deck check (r.55); export replays; the hash chain holds."""
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous()
        assert t.board.values["lid_lock"] is True and t.board.values["warning_light"] is False
        rounds = []
        for _ in range(3):
            rid = await t.play_round({1: 1000, 4: 500})
            rounds.append(rid)
            assert t.tc.view()["contestable_rounds"] == [rid]
            await t.lid_cycle()
            assert t.tc.view()["contestable_rounds"] == []
            await t.tc.dealer_input("next_round")
        await t.until(lambda: not t.tc.core.shoe.shuffling, "shuffle finished")
        await t.tc.supervisor_action("chief-ana", "close_table")
        await t.until(lambda: t.state == "closed", "deck check and close")
        assert t.kinds("deck_check")[-1]["ok"] is True
        assert t.kinds("round_started")[0]["burn"] == 1  # PT-2001 r.10
        assert [r["burn"] for r in t.kinds("round_started")[1:]] == [0, 0]
        assert t.journal.verify().ok
        out = tmp_path / "rounds.jsonl"
        with out.open("w") as fh:
            assert export_session(t.journal, fh) == (3, 0)
        for line in out.read_text().splitlines():
            assert replay(json.loads(line)).to_json()["valid"] is True
        assert "dealer_error" not in t.alert_kinds()


async def test_lid_not_opening_carries_cards_to_next_round_pt2001_r61(tmp_path: Path) -> None:
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous()
        await t.until(lambda: not t.tc.core.shoe.shuffling, "shuffle finished")
        t.ctl.shoe.model.shuffling = True  # white box: the machine is busy, the lid cannot open
        first = await t.play_round({2: 500})
        await t.until(lambda: t.kinds("lid_not_opened"), "OpenLid refused")
        assert t.kinds("lid_not_opened")[0]["carried"] == [first]
        assert t.board.values["lid_lock"] is True
        t.ctl.shoe.model.shuffling = False
        await t.tc.dealer_input("next_round")
        second = await t.play_round({2: 500})
        assert t.tc.view()["carried_rounds"] == [first]
        await t.lid_cycle()  # both rounds' cards go in together
        assert t.kinds("rounds_final")[-1]["rounds"] == [first, second]
        assert t.tc.core.out == 0


async def test_batch_shoe_cut_warning_card_and_reshuffle_pt2001(tmp_path: Path) -> None:
    """Batch shoe: cut by a seat (r.8), warning card near the 50th from the end (r.9), that round is the last
    (r.11), reshuffle, the right to cut passes to the next seat, the new shoe burns one card again (r.10)."""
    scenario = {"kind": "batch", "decks": 6, "seed": 3, "batch": {"warning_from_end": 50, "cut_from_end": 10}}
    async with table(tmp_path, scenario) as t:
        await t.tc.supervisor_action("chief-ana", "open_table", {"profile": "pt-2001", "shuffler": "batch"})
        await t.until(lambda: t.state == "cut", "shuffled, waiting for the cut")
        await t.tc.dealer_input("cut", {"seat": 1})
        seats = {s: 500 for s in range(1, 8)}
        while t.tc.core.shoe.last_round is None:
            await t.play_round(seats)
            if t.tc.core.shoe.last_round is None:
                await t.tc.dealer_input("next_round")
        last = t.tc.core.shoe.last_round
        if last == "next":  # came out between rounds: that round is still played (r.11)
            await t.tc.dealer_input("next_round")
            last = await t.play_round(seats)
        warning = t.kinds("warning_card_out")[0]
        assert warning["valid"] is True and abs(warning["position_from_end"] - 50) <= 10
        await t.tc.dealer_input("next_round")
        await t.until(lambda: t.state == "cut", "reshuffled")
        with pytest.raises(Rejected, match="seat 2 has the right to cut"):
            await t.tc.dealer_input("cut", {"seat": 1})
        await t.tc.dealer_input("cut", {"seat": 2})
        await t.play_round({1: 500})
        assert t.kinds("round_started")[-1]["burn"] == 1
        assert t.kinds("reshuffle")[0]["after_round"] == last


async def test_batch_shoe_mo2004_burns_as_many_cards_as_decks_then_one_per_round(tmp_path: Path) -> None:
    """MO-2004 art.4: decks-many burn cards at the shoe start, one per round after, one before the dealer's
    second card; the dealer may cut (art.2.1.1)."""
    scenario = {"kind": "batch", "decks": 6, "seed": 5, "batch": {"warning_from_end": 40, "cut_from_end": 10}}
    async with table(tmp_path, scenario) as t:
        await t.tc.supervisor_action("chief-ana", "open_table", {"profile": "mo-2004", "shuffler": "batch"})
        await t.until(lambda: t.state == "cut", "shuffled")
        await t.tc.dealer_input("cut", {"dealer": True})
        await t.play_round({1: 10000})
        await t.tc.dealer_input("next_round")
        await t.play_round({1: 10000, 2: 20000})
        started = t.kinds("round_started")
        assert [r["burn"] for r in started] == [6, 1]
        for r in started:
            cards = [c for c in t.kinds("card") if c["round_id"] == r["round_id"]]
            burns = sum(1 for c in cards if c["recipient"] == "burn")
            dealer = sum(1 for c in cards if c["recipient"] == "dealer")
            # one more burn before the dealer's second card, when the dealer gets one (art.4.2)
            assert burns == r["burn"] + (1 if dealer >= 2 else 0)
            assert all(c["recipient"] == "burn" for c in cards[: r["burn"]])


@pytest.mark.parametrize("phase", ["dealing", "players", "dealer"])
async def test_jam_during_a_round_cleared_by_supervisor_resumes_pt2001_r51(
    tmp_path: Path, phase: str
) -> None:
    """Jam: light on, lid locked, dealing blocked; the inspector unlocks, the jam clears, one confirms
    (who and when recorded); every card is accounted for, so the round continues where it stopped."""
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous()
        await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 1000})
        await t.tc.dealer_input("no_more_bets")
        await t.ctl.queue(["2C", "TS", "6D", "7S", "8C", "5H"])
        await t.draw(2 if phase == "dealing" else 5)
        if phase == "dealer":
            await t.tc.dealer_input("stand")
        assert t.state == phase
        await t.ctl.jam("output")
        await t.until(lambda: t.state == "jammed", "jam")
        await t.until(lambda: t.board.values["warning_light"], "warning light")
        assert t.board.values["lid_lock"] is True
        with pytest.raises(Rejected, match="dealing blocked"):
            await t.tc.dealer_input("stand")
        await t.tc.supervisor_action("chief-rui", "unlock_lid")  # the inspector alone opens it (r.51)
        await t.until(lambda: t.ctl.shoe.model.locked is False, "lid unlocked")
        await t.ctl.clear_jam()
        await t.until(lambda: getattr(t.tc.core.faults.get("jam"), "device_cleared", False), "device cleared")
        await t.tc.supervisor_action("chief-rui", "clear_jam")
        await t.until(lambda: t.state == phase, "resumed after the count")
        assert t.kinds("jam_cleared")[0]["user"] == "chief-rui"
        assert not t.kinds("round_void")
        await t.until(lambda: t.ctl.shoe.model.locked, "lid locked again")
        await t.until(lambda: not t.ctl.shoe.model.warning_light, "warning light off")
        assert t.board.values["warning_light"] is False
        if phase == "dealing":
            await t.draw(3)
        if phase != "dealer":
            await t.tc.dealer_input("stand")
        await t.draw(1)
        assert t.state == "settled"
        assert t.kinds("round_settled")


async def test_jam_while_betting_blocks_then_continues(tmp_path: Path) -> None:
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous()
        await t.until(lambda: not t.tc.core.shoe.shuffling, "shuffle finished")
        await t.ctl.jam("shuffler")
        await t.until(lambda: t.state == "jammed", "jam")
        with pytest.raises(Rejected, match=r"r\.51"):
            await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 500})
        await t.tc.supervisor_action("chief-rui", "unlock_lid")
        await t.until(lambda: not t.ctl.shoe.model.locked, "lid unlocked")
        await t.ctl.clear_jam()
        await t.until(lambda: getattr(t.tc.core.faults.get("jam"), "device_cleared", False), "device cleared")
        await t.tc.supervisor_action("chief-rui", "clear_jam")
        await t.until(lambda: t.state == "betting", "back to betting")
        await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 500})


async def test_forced_lid_is_a_tamper_alarm_pt2001_r60(tmp_path: Path) -> None:
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous()
        await t.until(lambda: not t.tc.core.shoe.shuffling, "shuffle finished")
        await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 1000})
        await t.tc.dealer_input("no_more_bets")
        await t.ctl.force_lid()
        await t.until(lambda: t.state == "tamper", "tamper")
        assert "tamper" in t.alert_kinds()
        assert t.board.values["warning_light"] is True
        await t.ctl.close_lid()
        await t.until(lambda: t.tc.core.lid.state in ("closed", "locked"), "lid closed")
        await t.tc.supervisor_action("chief-rui", "lock_lid")
        await t.until(lambda: t.state == "dealing", "resumed")


async def test_unreadable_card_replaced_by_supervisor_pt2001_r51(tmp_path: Path) -> None:
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous()
        await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 1000})
        await t.tc.dealer_input("no_more_bets")
        await t.ctl.queue(["2C"])
        await t.draw(1)
        await t.ctl.unreadable(damaged=True)
        await t.draw(1)
        assert t.tc.view()["awaiting_card_replacement"] is True
        assert t.board.values["warning_light"] is True
        await t.tc.supervisor_action("chief-rui", "replace_card", {"card": "TS"})
        assert t.kinds("card_replaced")[0] == {
            "at": t.kinds("card_replaced")[0]["at"],
            "card": "TS",
            "damaged": True,
            "shoe_seq": t.tc.core.shoe.last_seq,
            "user": "chief-rui",
        }
        assert t.kinds("card")[-1]["recipient"] == {"seat": 1, "hand": 0}
        assert t.board.values["warning_light"] is False


async def test_face_up_card_invalid_and_dealer_drawing_on_17_mo2004(tmp_path: Path) -> None:
    """MO-2004 art.5.1.1: a face-up card is invalid; art.6.1: a card drawn by the dealer on 17+ is void."""
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous("mo-2004")
        await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 10000})
        await t.tc.dealer_input("no_more_bets")
        await t.ctl.queue(["2C", "3C", "4C", "5C", "6C", "7C", "TS"])
        await t.draw(7)  # six burn cards (art.4.1.1) and seat 1's first card
        await t.ctl.queue(["9D", "6D", "7S"])
        await t.ctl.face_up()
        await t.draw(1)
        assert t.kinds("card")[-1]["counts"] is False
        assert t.kinds("dealer_error")[-1]["rule"] == "MO-2004 art.5.1.1"
        await t.draw(2)  # dealer 6D, seat 1 7S -> 17
        await t.tc.dealer_input("stand")
        await t.ctl.queue(
            ["2D", "KD", "AH", "3H"]
        )  # burn before the dealer's second card, then 16, then A -> 17
        await t.draw(3)
        assert t.state == "settled"
        await t.draw(1)  # the dealer draws on 17
        assert t.kinds("dealer_error")[-1]["rule"] == "MO-2004 art.6.1"
        assert t.kinds("card")[-1]["counts"] is False


async def _deal_until_insurance(t: Table, cards: list[str]) -> None:
    """One bet on seat 1; the next cards out of the shoe are `cards` (burn first), dealt until the seat's
    insurance decision is awaited."""
    await t.ctl.queue(cards)
    await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 1000})
    await t.tc.dealer_input("no_more_bets")
    while "insurance" not in {str(a) for a in t.tc.core.round.engine.allowed_actions()}:
        await t.draw(1)


async def test_insurance_and_even_money_buttons_act_for_the_awaited_seat_pt2001_r33_r34(
    tmp_path: Path,
) -> None:
    """The dealer's insurance and even-money buttons (config [gpio.pins]) act like the MQTT dealer commands for
    the seat whose decision is awaited (PT-2001 r.33 insurance against a dealer's ace, r.34 even money for a
    blackjack); pressed when nothing is offered they are refused and change nothing."""
    async with table(tmp_path, CONTINUOUS) as t:
        await t.load_continuous()
        t.board.pulse("button_insurance")  # betting: nothing offered
        t.board.pulse("button_even_money")
        await t.until(lambda: t.state == "betting", "still betting")
        assert t.tc.core.round is None or not t.kinds("round_started")

        await _deal_until_insurance(t, ["2C", "TS", "AH", "9D"])  # burn, seat 1, dealer's ace, seat 1: 19
        t.board.pulse("button_insurance")
        await t.until(lambda: t.tc.core.round.engine.seats[1].insurance > 0, "insurance taken by the button")
        assert t.tc.core.round.engine.seats[1].insurance == 500  # half the bet: the largest allowed (r.33)

        while t.state in ("dealing", "players", "dealer"):  # the rest of the round: stand, the dealer draws
            engine = t.tc.core.round.engine
            if engine.expected_recipient() is not None:
                await t.draw(1)
            else:
                await t.tc.dealer_input("stand")
        await t.lid_cycle()
        await t.tc.dealer_input("next_round")
        await t.until(lambda: t.state == "betting", "next round")

        await _deal_until_insurance(t, ["AS", "AD", "KD"])  # seat 1 ace, dealer's ace, seat 1 king: blackjack
        t.board.pulse("button_even_money")
        await t.until(
            lambda: str(t.tc.core.round.engine.seats[1].hands[0].status) == "even_money", "even money"
        )


def _fill_journal(journal: Journal) -> None:
    """No page more for the database (``PRAGMA max_page_count``): every commit that needs one fails with
    SQLITE_FULL, "database or disk is full", as on a full disk (tests/test_journal_io.py)."""
    import sqlite3

    pages = journal._conn.execute("PRAGMA page_count").fetchone()[0]
    journal._conn.execute(f"PRAGMA max_page_count = {pages}")
    for size in (3000, 1000, 300, 100, 30, 1):
        with pytest.raises(sqlite3.OperationalError, match="full"):
            for _ in range(1000):
                with journal.transaction() as tx:
                    tx.append("filler", {"x": "x" * size})


@pytest.mark.parametrize("shoe_asked_before_the_pump_commits", [False, True])
async def test_cards_drawn_while_the_journal_is_full_are_committed_once_and_in_order_issue14(
    tmp_path: Path, shoe_asked_before_the_pump_commits: bool
) -> None:
    """Issue 14 items 1 and 3: a card whose commit failed (journal disk full) is sent again by the shoe once
    the journal writes (docs/protocol.md §5a), and a later card the event pump already holds is not committed
    before it (out of order: the first card would be lost) nor twice (the shoe sends it again too). Both
    orders of the race: the pump's later card reaches the table before the shoe is asked again, or after."""
    async with table(tmp_path, CONTINUOUS, link_up_seen=False) as t:
        await t.until(lambda: t.tc.core.device.boot_id, "the shoe identified")
        await t.load_continuous()
        await t.tc.dealer_input("place_bet", {"seat": 1, "amount": 1000})
        await t.tc.dealer_input("no_more_bets")
        codes = ["2C", "9H", "KD", "7S"]
        await t.ctl.queue(codes)
        _fill_journal(t.journal)
        await t.ctl.draw(1)
        await t.until(lambda: "journal_io" in t.tc.core.faults and t.tc.uncommitted_events == 1, "fault")
        lock = t.tc._lock
        async with lock:  # the table busy: the pump takes the next card from the driver and waits
            retry = None
            if shoe_asked_before_the_pump_commits:
                t.journal._conn.execute("PRAGMA max_page_count = 1073741823")  # space again
                retry = asyncio.get_running_loop().create_task(
                    t.tc.retry_journal()
                )  # the service's health loop
                await t.until(lambda: len(lock._waiters or ()) == 1, "the retry waiting")
            delivered = t.driver.resume_point[1]
            await t.ctl.draw(1)
            await t.until(
                lambda: t.driver.resume_point[1] == delivered + 1 and t.driver._events.qsize() == 0,
                "the pump holding the second card",
            )
            if not shoe_asked_before_the_pump_commits:
                t.journal._conn.execute("PRAGMA max_page_count = 1073741823")
        if retry is not None:
            assert await retry is True
        else:
            await t.until(lambda: not lock.locked(), "the pump's batch handled")
            await t.tc.retry_journal()  # the service's health loop
        await t.until(lambda: t.tc.core.shoe.last_seq >= 2, "both cards, sent again by the shoe")
        await t.tc.supervisor_action("chief-ana", "clear_journal_io")
        await t.until(lambda: t.state in ("dealing", "players"), "resumed")
        await t.draw(1)
        cards = [r["card"] for r in t.kinds("card")]
        assert cards[:3] == codes[:3], cards  # in the order drawn, each once
        assert t.tc.resend.dropped >= 1
        assert not {"shoe_sequence", "card_count"} & set(t.tc.core.faults)
        assert "shoe_sequence" not in t.alert_kinds()
        assert t.journal.verify().ok
