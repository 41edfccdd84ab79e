"""Full sessions on the real service process for each rule profile family, with every shoe procedure:
loading an empty machine (PT-2001 r.53-54), the continuous lid cycle (r.59-60), the r.61 carry-over,
closing with the deck check (r.55), the batch cut and warning card (r.8-11) and MO-2004's burns (art.4)."""

from __future__ import annotations

import pytest

from tablebench.bench.soak import reconcile_rig
from tests.support.rig import journal_records

pytestmark = [pytest.mark.hil, pytest.mark.timeout(240)]

CONTINUOUS = {"kind": "continuous", "decks": 6, "seed": 11, "start_empty": True}


async def test_continuous_session_pt2001_r53_r55_r59_scripted_and_random_rounds(table) -> None:
    """An empty machine is loaded through the window in two packets (r.53-54); rounds with scripted and
    random card orders each go through the automatic lid cycle (r.59-60); closing runs the deck check
    (r.55). Every round replays valid, every card is the one the shoe dealt, no event is missing."""
    async with table(scenario=CONTINUOUS, seed=3) as (rig, d):
        assert (await rig.ctl().state())["cards_inside"] == 0  # start_empty: the decks are outside
        await d.open_session()
        assert d.table()["session_id"] and d.view.states["shoe"]["cards_inside"] == 312
        scripted = {
            0: ["5S", "8S", "8H", "TC", "8D", "9C"],  # burn, seat 1 8S, seat 3 8H, dealer TC, 8D, 9C
            2: ["2C", "AS", "KH", "6D", "TS", "5C"],
        }
        rounds: list[str] = []
        for i in range(6):
            rid = await d.play_round({1: 1000, 3: 500}, scripted.get(i))
            rounds.append(rid)
            assert d.round()["contestable"] is True  # r.62: until the cards go in
            assert await d.lid_cycle() is True
            assert rid not in d.table()["contestable_rounds"]
            await d.cmd("next_round")
            await d.wait_state("betting")
        await d.close_session()
        rep = await reconcile_rig(d)
    assert rep.rounds == 6 and rep.settled == 6 and rep.replay_failures == []
    assert rep.cards_dealt == rep.cards_journaled and rep.card_mismatches == []
    assert rep.gaps == [] and rep.outbox_left == 0 and rep.chain_ok
    # the scripted cards went to the hands in dealing order, the first one burnt (r.10)
    first = [(c["card"], c["recipient"]) for c in journal_records(rig, "card") if c["round_id"] == rounds[0]][
        :6
    ]
    assert first == [
        ("5S", "burn"),
        ("8S", {"seat": 1, "hand": 0}),
        ("8H", {"seat": 3, "hand": 0}),
        ("TC", "dealer"),
        ("8D", {"seat": 1, "hand": 0}),
        ("9C", {"seat": 3, "hand": 0}),
    ]


async def test_lid_cannot_open_cards_carried_to_next_round_pt2001_r61(table) -> None:
    """The machine is still shuffling when the round ends: the lid stays locked, the cards stay in the
    discard and go in together with the next round's (r.61)."""
    async with table(scenario={**CONTINUOUS, "timings": {"shuffle_s": 4.0}}) as (rig, d):
        await d.open_session()
        await d.play_round({2: 500})
        assert await d.lid_cycle() is True  # closing the lid starts a 4 s shuffle
        await d.cmd("next_round")
        await d.wait_state("betting")
        first = await d.play_round({2: 500}, ["2C", "TS", "9D", "TH", "8C"])  # no draws: a quick round
        assert await d.lid_cycle() is False
        assert first in rig.monitor.received.carried
        assert (await rig.gpio("read", name="lid_lock"))["value"] is True
        await d.cmd("next_round")
        await d.wait_state("betting")
        assert d.table()["carried_rounds"] == [first]
        await d.until(lambda v: v.states["shoe"]["shuffling"] is False, "shuffle finished")
        second = await d.play_round({2: 500})
        assert await d.lid_cycle() is True  # both rounds' cards go in together
        await d.barrier()
        assert d.table()["carried_rounds"] == [] and d.table()["cards_out"] == 0
        rep = await reconcile_rig(d)
    assert journal_records(rig, "rounds_final")[-1]["rounds"] == [first, second]
    assert rep.settled == 3 and rep.card_mismatches == [] and rep.gaps == []


async def test_batch_shoe_cut_warning_card_reshuffle_pt2001_r8_r11(table) -> None:
    """Batch shoe: a seat cuts (r.8), the warning card comes ~50 cards from the end (r.9), that round is
    the last one (r.11), the shoe is reshuffled and the right to cut passes on; one burn per new shoe
    (r.10)."""
    scenario = {"kind": "batch", "decks": 6, "seed": 3, "batch": {"warning_from_end": 50, "cut_from_end": 10}}
    async with table(scenario=scenario, seed=5) as (rig, d):
        await d.open_session("pt-2001")
        seats = {s: 500 for s in range(1, 8)}
        shoe_no = d.view.states["shoe"]["shoe_no"]
        for _ in range(40):
            await d.play_round(seats)
            await d.finish_round()
            if d.view.states["shoe"]["shoe_no"] != shoe_no:
                break
        else:
            pytest.fail("the warning card never ended the shoe")
        assert d.cut_seat == 2  # r.8: the right to cut passed from seat 1 to the next seat
        await d.play_round({1: 500})
        rep = await reconcile_rig(d)
    assert rep.replay_failures == [] and rep.card_mismatches == [] and rep.gaps == []
    warning = journal_records(rig, "warning_card_out")
    burns = [r["burn"] for r in journal_records(rig, "round_started")]
    assert warning and warning[0]["valid"] is True and abs(warning[0]["position_from_end"] - 50) <= 10
    assert burns[0] == 1 and burns[-1] == 1 and set(burns[1:-1]) <= {0}  # r.10: one burn per new shoe


async def test_batch_mo2004_burns_decks_then_one_per_round_art4(table) -> None:
    """MO-2004 art.4: as many burn cards as decks at the start of a shoe, then one per round and one before
    the dealer's second card; the dealer may cut (art.2.1.1)."""
    scenario = {"kind": "batch", "decks": 6, "seed": 5, "batch": {"warning_from_end": 40, "cut_from_end": 10}}
    async with table(scenario=scenario, profile="mo-2004") as (rig, d):
        await d.open_session("mo-2004")
        first = await d.play_round({1: 10000})
        await d.finish_round()
        second = await d.play_round({1: 10000, 2: 20000})
        rep = await reconcile_rig(d)
    assert rep.settled == 2 and rep.replay_failures == [] and rep.card_mismatches == []
    started = {r["round_id"]: r["burn"] for r in journal_records(rig, "round_started")}
    cards = journal_records(rig, "card")
    assert started == {first: 6, second: 1}
    for rid, burn in started.items():
        mine = [c for c in cards if c["round_id"] == rid]
        assert all(c["recipient"] == "burn" for c in mine[:burn])
        dealer = sum(1 for c in mine if c["recipient"] == "dealer")
        assert sum(1 for c in mine if c["recipient"] == "burn") == burn + (1 if dealer >= 2 else 0)
