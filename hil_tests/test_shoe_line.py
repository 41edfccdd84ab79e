"""The shoe line on the real service (`tablectl run`, emulated shoe on a pty, real mosquitto): no card the shoe
saw acknowledged is lost (docs/protocol.md §5a, issue 14 item 1).

The kill lands between a card's acknowledgement and its commit without any hook in the service: the test holds
the journal's SQLite write lock (``BEGIN IMMEDIATE``, as a slow or stuck disk would), so the service acks the
card on arrival and then waits in its commit; once the shoe reports the ack (its queue is empty) the service is
killed with SIGKILL, the lock released and the service started again."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from controller.client import CommandFailed
from tablebench.bench.driver import DONE_STATES, ROUND_STATES
from tablebench.bench.soak import _wait_outbox_empty, reconcile_rig
from tests.support.rig import journal_rows

pytestmark = [pytest.mark.hil, pytest.mark.timeout(240)]

CONTINUOUS = {"kind": "continuous", "decks": 6, "seed": 21, "start_empty": True}


async def _finish_round(d, rid: str) -> None:
    """The rest of a round already under way, then its lid cycle."""
    await d.play_out(rid)
    await d.finish_round()


async def test_kill_9_between_a_cards_ack_and_its_commit_loses_no_card(table) -> None:
    async with table(scenario=CONTINUOUS) as (rig, d):
        await d.open_session()
        await d.cmd("place_bet", seat=1, amount=1000)
        rid = str((await d.cmd("no_more_bets"))["result"]["round_id"])
        ctl = rig.ctl()
        await _wait_outbox_empty(rig.journal_path)  # nothing else of the service is waiting to write
        seq = int((await ctl.state())["shoe_seq"]) + 1
        lock = sqlite3.connect(rig.journal_path, timeout=10, isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")  # the service's next commit waits (a stuck disk)
        try:
            assert await ctl.draw(1) == 1
            for _ in range(500):  # the shoe got the service's ack: nothing left in its queue
                st = await ctl.state()
                if st["shoe_seq"] == seq and st["pending_events"] == 0:
                    break
                await asyncio.sleep(0.01)
            else:
                pytest.fail(f"the service never acknowledged card #{seq}: {st}")
            await asyncio.to_thread(rig.stack.kill_controller)  # power loss before the commit
        finally:
            lock.execute("ROLLBACK")
            lock.close()
        assert not [c for c in journal_rows(rig.journal_path, "card") if c["shoe_seq"] == seq], (
            "kill came too late"
        )

        await rig.monitor.wait_for(lambda v: v.status == "offline", 30)
        await asyncio.to_thread(rig.stack.start_controller)
        await rig.wait_online()
        await d.barrier()
        await _finish_round(d, rid)
        rep = await reconcile_rig(d)

    cards = {c["shoe_seq"]: c for c in journal_rows(rig.journal_path, "card")}
    assert seq in cards and cards[seq]["round_id"] == rid, "the acknowledged card was lost"
    assert journal_rows(rig.journal_path, "round_void") == [], "the round was voided"
    assert rep.rounds == rep.settled == 1 and rep.void == 0, rep.lines()
    assert rep.cards_dealt == rep.cards_journaled and rep.card_mismatches == [], rep.lines()
    assert rep.gaps == [] and rep.chain_ok, rep.lines()


async def _start_round(d, seats: dict[int, int]) -> str:
    for seat, amount in seats.items():
        await d.cmd("place_bet", seat=seat, amount=amount)
    return str((await d.cmd("no_more_bets"))["result"]["round_id"])


def _stopped_safely(d, fault: str) -> None:
    """Lid locked, light on, the fault listed, a critical alert open (the monitor's retained view)."""
    table, lid = d.table(), d.view.states.get("lid", {})
    assert fault in table.get("faults", []), table
    assert table["outputs"] == {"lid_lock": True, "warning_light": True}, table
    assert lid.get("locked") is True, lid
    assert any(a["kind"] == fault and a["severity"] == "critical" for a in d.view.alerts_open)


async def test_hostile_shoe_repeating_a_shoe_seq_stops_the_table_at_once(table) -> None:
    """Issue 13 §5: a CARD_OUT with a valid CRC but a shoe_seq already used (a replayed frame: the same card) is
    not dealt; the table stops at once (fault shoe_sequence) until a supervisor clears it, then the round goes
    on."""
    async with table(scenario=CONTINUOUS) as (rig, d):
        await d.open_session()
        rid = await _start_round(d, {1: 1000})
        await d.draw(1)  # the burn card
        seq = int((await rig.ctl().state())["shoe_seq"])
        (burn,) = [c["card"] for c in journal_rows(rig.journal_path, "card") if c["shoe_seq"] == seq]
        await rig.ctl().forge(burn, seq)  # the same number again, the same card
        await d.wait_state("shoe_sequence")
        await d.until(lambda v: any(a["kind"] == "shoe_sequence" for a in v.alerts_open), "the alert")
        _stopped_safely(d, "shoe_sequence")
        with pytest.raises(CommandFailed, match="dealing blocked"):
            await rig.dealer.dealer("place_bet", seat=2, amount=1000)
        assert len([c for c in journal_rows(rig.journal_path, "card") if c["shoe_seq"] == seq]) == 1
        await rig.sv("clear_shoe_fault")
        await d.wait_state(*ROUND_STATES)
        await _finish_round(d, rid)
        rep = await reconcile_rig(d)
    assert journal_rows(rig.journal_path, "round_void") == []
    assert rep.rounds == rep.settled == 1 and rep.cards_dealt == rep.cards_journaled, rep.lines()


async def test_a_forged_card_taking_a_real_cards_shoe_number_voids_the_round(table) -> None:
    """Issue 27 §3: a hostile device sends a card (valid CRC) with the next shoe number during the deal; it is
    dealt to seat 1. The real card with that number then stops the table (shoe_sequence). Before, after
    clear_shoe_fault the resync's count matched (the forged card had taken the real card's place) and the round
    went on with seat 1 holding the forged card. Now the identities are compared: two different cards claim one
    shoe number, the round's cards can no longer be attributed, the round is void and its bets returned
    (PT-ONLINE-2015 r.27-28)."""
    async with table(scenario=CONTINUOUS) as (rig, d):
        await d.open_session()
        ctl = rig.ctl()
        await _start_round(d, {1: 1000})
        await d.draw(1)  # the burn card
        seq = int((await ctl.state())["shoe_seq"])
        await ctl.queue(["2C"])  # the real card that comes out next
        await ctl.forge("AS", seq + 1)  # the forged one takes its number first
        await d.until(lambda v: v.states.get("table", {}).get("last_shoe_seq", -1) >= seq + 1, "forged card")
        assert [c["card"] for c in journal_rows(rig.journal_path, "card") if c["shoe_seq"] == seq + 1] == [
            "AS"
        ]
        await ctl.draw(1)  # the real card #seq+1
        await d.wait_state("shoe_sequence")
        (void,) = journal_rows(rig.journal_path, "round_void")
        assert void["cards"] == ["AS", "2C"] and void["shoe_seq"] == seq + 1, void
        assert "two different cards claimed shoe number" in void["reason"]
        await d.until(lambda v: any(a["kind"] == "shoe_sequence" for a in v.alerts_open), "the alert")
        _stopped_safely(d, "shoe_sequence")
        await rig.sv("clear_shoe_fault")
        await d.wait_state(*DONE_STATES)
    assert len(journal_rows(rig.journal_path, "round_void")) == 1
    assert not journal_rows(rig.journal_path, "round_settled"), "the round was settled with the forged card"


async def test_hostile_shoe_dealing_more_of_a_card_than_the_decks_hold_stops_the_table_at_once(table) -> None:
    """Issue 13 §5: six decks hold six aces of spades; a seventh in one round (valid CRC, fresh shoe_seq)
    stops the table at once (fault card_count), not at the next lid cycle. The round's forged cards are then
    unaccounted for by the shoe's count: the round is void (PT-ONLINE-2015 r.27-28)."""
    async with table(scenario=CONTINUOUS) as (rig, d):
        await d.open_session()
        decks = int(CONTINUOUS["decks"])
        await _start_round(d, {s: 1000 for s in range(1, 8)})
        ctl = rig.ctl()
        seq = int((await ctl.state())["shoe_seq"])
        for i in range(1, decks + 2):
            await ctl.forge("AS", seq + i)
        await d.wait_state("card_count")
        await d.until(lambda v: any(a["kind"] == "card_count" for a in v.alerts_open), "the alert")
        _stopped_safely(d, "card_count")
        aces = [c for c in journal_rows(rig.journal_path, "card") if c["card"] == "AS"]
        assert len(aces) == decks, "the impossible card was dealt"
        (rec,) = journal_rows(rig.journal_path, "card_count")
        assert rec["shoe_seq"] == seq + decks + 1 and rec["decks"] == decks
        with pytest.raises(CommandFailed, match="dealing blocked"):
            await rig.dealer.dealer("hit", seat=1)
        await rig.sv("clear_shoe_fault", fault="card_count")
        await d.wait_state(*DONE_STATES)
    assert len(journal_rows(rig.journal_path, "round_void")) == 1
