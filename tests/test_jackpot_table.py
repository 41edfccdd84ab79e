"""The progressive jackpot inside the pure table core (PT-2001 r.38-50), driven through the Harness.

Every test plays real cards through the rules engine; the jackpot's publishes are validated against the MQTT
schemas at the end of each test (``published`` fixture).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.jackpot import BET, CFG, SEED, jackpot_messages_valid  # noqa: F401 (fixture)

from controller.effects import JournalRecord, Rejected
from controller.jackpot.meter import UNIT
from controller.jackpot.table import TableJackpot
from controller.mqtt.schemas import validate_message
from controller.rules.profiles import load_profile
from controller.table import inputs
from controller.table.core import TableCore
from controller.table.messages import messages
from drivers import events as ev
from tablebench.table_testing import Harness

PER_CHIP_UNITS = BET * 7000  # one jackpot bet on the meter, in 1/10,000 minor units


def make_table(mode: str = "automatic", display: bool = True, profile: str = "pt-2001") -> Harness:
    h = Harness()
    h.core = TableCore(load_profile, jackpot=TableJackpot())
    h.sup("open_table", profile=profile, shuffler="continuous", jackpot={**CFG, "mode": mode})
    total = h.core.tp.total_cards
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(total // 2))
    h.dev(ev.DiscardInserted(total - total // 2))
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dev(ev.ShuffleStarted())
    h.dev(ev.ShuffleFinished(total))
    assert h.core.state == "betting"
    if display:
        display_link(h, True)
    return h


def display_link(h: Harness, connected: bool) -> None:
    h.apply(inputs.JackpotDisplay(connected))


def chip(h: Harness, seat: int, present: bool = True) -> None:
    h.apply(inputs.GpioInput(f"chip_slot_{seat}", present))


def jp(h: Harness) -> TableJackpot:
    assert isinstance(h.core.jackpot, TableJackpot)
    return h.core.jackpot


def meter_units(h: Harness) -> int:
    m = jp(h).meter
    assert m is not None
    return m.meter_units


def events(h: Harness, action: str | None = None) -> list[dict[str, Any]]:
    return [
        e.data
        for e in messages(h.effects)
        if e.topic == "events/jackpot" and (action is None or e.data["action"] == action)
    ]


def last_state(h: Harness, name: str) -> dict[str, Any]:
    docs = [e.data for e in messages(h.effects) if e.topic == f"state/{name}"]
    return docs[-1]


def start_round(h: Harness, bets: dict[int, int], chips: list[int] = ()) -> str:
    for seat, amount in bets.items():
        h.dealer("place_bet", seat=seat, amount=amount)
    for seat in chips:
        if jp(h).config.mode == "automatic":
            chip(h, seat)
        else:
            h.dealer("jackpot_chip", seat=seat)
    return h.dealer("no_more_bets").result["round_id"]


def deal(h: Harness, *cards: str) -> None:
    for code in cards:
        assert h.core.round.engine.expected_recipient() is not None, f"no card expected before {code}"
        h.card(code)


def finish_round(h: Harness) -> None:
    """Stand everything, draw for the dealer, return the cards: the table is betting again."""
    tens = iter([r + s for r in "TJQK" for s in "SHDC"])
    while h.core.state in ("players", "dealer", "dealing"):
        engine = h.core.round.engine
        if engine.expected_recipient() is not None:
            h.card(next(tens))
            continue
        allowed = {str(a) for a in engine.allowed_actions()}
        action = next(a for a in ("no_insurance", "stand") if a in allowed)
        h.dealer("decline_insurance" if action == "no_insurance" else action)
    h.lid_cycle()
    h.dealer("next_round")
    assert h.core.state == "betting"


# Every jackpot document and event these tests produce is valid against its (strict) schema.
pytestmark = pytest.mark.usefixtures("jackpot_messages_valid")


# ---- collection (PT-2001 r.41, r.45, r.47, r.48) ---------------------------------------------------------


def test_automatic_collection_increments_meter_in_the_round_transaction_pt2001_r41a() -> None:
    h = make_table()
    before = meter_units(h)
    for seat in (1, 3):
        h.dealer("place_bet", seat=seat, amount=500)
        chip(h, seat)
    assert meter_units(h) == before  # sensed, not collected yet: the meter moves at "no more bets"
    step = h.dealer("no_more_bets")
    assert meter_units(h) == before + 2 * PER_CHIP_UNITS
    # The contribution is a record and an event of the very input that started the round (one transaction).
    kinds = [e.kind for e in step.effects if isinstance(e, JournalRecord)]
    assert "round_started" in kinds and "jackpot" in kinds
    (contribution,) = [e.data for e in messages(step.effects) if e.topic == "events/jackpot"]
    assert contribution == {
        "action": "contribution",
        "round_id": step.result["round_id"],
        "seats": [1, 3],
        "chips": 2,
        "meter": SEED + 140,
        "currency": "EUR",
    }
    assert last_state(h, "jackpot")["meter"] == SEED + 140
    started = h.records("round_started")[-1]
    assert started["jackpot_chips"] == [1, 3]
    assert all(b.get("jackpot_chip") for b in started["bets"])


def test_sub_cent_contributions_are_carried_exactly_pt2001_r41() -> None:
    h = make_table()
    # the sign shows whole cents; the remainder is carried (increment 70 % of 1.00 = 0.70 per chip)
    for _ in range(3):
        start_round(h, {1: 500}, chips=[1])
        finish_round(h)
    assert meter_units(h) == SEED * UNIT + 3 * PER_CHIP_UNITS
    assert last_state(h, "jackpot")["meter"] == SEED + 210


def test_chip_after_no_more_bets_is_refused_and_flagged_pt2001_r48() -> None:
    h = make_table()
    rid = start_round(h, {1: 500, 2: 500}, chips=[1])
    assert h.records("round_started")[-1]["jackpot_chips"] == [1]
    before = meter_units(h)
    h.clear()
    chip(h, 2)  # slid in while the cards are dealt
    (refused,) = events(h, "chip_refused")
    assert refused == {
        "action": "chip_refused",
        "seat": 2,
        "reason": "late",
        "round_id": rid,
        "message": refused["message"],
    }
    assert "PT-2001 r.48" in refused["message"]
    assert [a.kind for a in h.alerts()] == ["dealer_error"]
    assert meter_units(h) == before


def test_chip_without_main_bet_is_refused_pt2001_r45() -> None:
    h = make_table()
    h.dealer("place_bet", seat=1, amount=500)
    chip(h, 1)
    chip(h, 4)  # no main bet on seat 4
    before = meter_units(h)
    rid = h.dealer("no_more_bets").result["round_id"]
    (refused,) = events(h, "chip_refused")
    assert (refused["seat"], refused["reason"], refused["round_id"]) == (4, "no_main_bet", rid)
    assert "PT-2001 r.45" in refused["message"]
    assert meter_units(h) == before + PER_CHIP_UNITS
    # Manual mode: the dealer's entry is refused outright.
    m = make_table(mode="manual")
    with pytest.raises(Rejected, match=r"r\.45"):
        m.dealer("jackpot_chip", seat=2)


def test_one_chip_per_seat_however_often_the_sensor_toggles_pt2001_r47() -> None:
    h = make_table()
    h.dealer("place_bet", seat=5, amount=500)
    for present in (True, False, True, False, True):
        chip(h, 5, present)
    before = meter_units(h)
    h.dealer("no_more_bets")
    assert meter_units(h) == before + PER_CHIP_UNITS
    assert events(h, "contribution")[-1]["chips"] == 1
    m = make_table(mode="manual")
    m.dealer("place_bet", seat=2, amount=500)
    m.dealer("jackpot_chip", seat=2)
    with pytest.raises(Rejected, match=r"r\.47"):
        m.dealer("jackpot_chip", seat=2)


def test_chip_taken_back_before_no_more_bets_is_not_collected_pt2001_r41a() -> None:
    h = make_table()
    h.dealer("place_bet", seat=1, amount=500)
    chip(h, 1)
    chip(h, 1, False)
    before = meter_units(h)
    h.dealer("no_more_bets")
    assert meter_units(h) == before
    assert events(h, "contribution") == []


def test_manual_mode_dealer_entries_are_the_count_pt2001_r41b() -> None:
    h = make_table(mode="manual")
    before = meter_units(h)
    start_round(h, {1: 500, 2: 500, 3: 500}, chips=[1, 3])
    assert meter_units(h) == before + 2 * PER_CHIP_UNITS
    assert events(h, "contribution")[-1]["seats"] == [1, 3]
    with pytest.raises(Rejected, match=r"r\.41a"):  # automatic tables take no manual entries
        a = make_table()
        a.dealer("place_bet", seat=1, amount=500)
        a.dealer("jackpot_chip", seat=1)


@settings(max_examples=25, deadline=None)
@given(
    bets=st.sets(st.integers(1, 7), max_size=7),
    toggles=st.lists(st.tuples(st.integers(1, 7), st.booleans()), max_size=20),
)
def test_collection_counts_exactly_the_present_chips_on_seats_with_a_bet(
    bets: set[int], toggles: list[tuple[int, bool]]
) -> None:
    """PT-2001 r.41a, r.45, r.47: whatever the sensors do, the meter grows by one bet per seat that has a
    main bet and a chip in its slot at "no more bets"."""
    h = make_table()
    for seat in sorted(bets):
        h.dealer("place_bet", seat=seat, amount=500)
    level: dict[int, bool] = {}
    for seat, present in toggles:
        chip(h, seat, present)
        level[seat] = present
    if not bets:
        return
    before = meter_units(h)
    h.dealer("no_more_bets")
    expected = sorted(s for s in bets if level.get(s))
    assert meter_units(h) == before + len(expected) * PER_CHIP_UNITS
    assert h.records("round_started")[-1]["jackpot_chips"] == expected
    refused = sorted(e["seat"] for e in events(h, "chip_refused") if e["reason"] == "no_main_bet")
    assert refused == sorted(s for s, here in level.items() if here and s not in bets)


# ---- hits (PT-2001 r.42, r.43, r.49, r.50) ------------------------------------------------------------


def pending(h: Harness) -> list[dict[str, Any]]:
    return last_state(h, "jackpot")["pending_hits"]


# seat 1 plays, seat 3 holds a plain hand; dealer up card 9S, hole 7D (no insurance).
# Deal order: burn, s1, s3, dealer, s1, s3, dealer.
@pytest.mark.parametrize(
    ("first_two", "then", "combination", "amount"),
    [
        (("AH", "AS"), ["stand"], "TWO_ACES_MIXED", 25 * BET),
        (("AC", "AC"), ["stand"], "TWO_ACES_SUITED", 100 * BET),
        (("AH", "AH"), ["hit:AD", "stand"], "THREE_ACES_MIXED", 250 * BET),
        (("AS", "AS"), ["hit:AS", "stand"], "THREE_ACES_SUITED", 2500 * BET),
        (("AH", "AD"), ["split", "card:AH", "card:AD"], "FOUR_ACES_ONE_COLOUR", None),
        (("AS", "AC"), ["split", "card:AC", "card:9H"], "THREE_ACES_MIXED", 250 * BET),
    ],
)
def test_each_combination_from_real_cards_split_hands_included_pt2001_r42_r43(
    first_two: tuple[str, str], then: list[str], combination: str, amount: int | None
) -> None:
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[1])
    meter_at_hit = SEED + 70  # one chip of 0.70 on the meter
    deal(h, "5C", first_two[0], "8D", "9S", first_two[1], "9D", "7D")
    for step in then:
        if step.startswith("hit:"):
            h.dealer("hit")
            deal(h, step[4:])
        elif step.startswith("card:"):
            deal(h, step[5:])
        else:
            h.dealer(step)
    (hit,) = pending(h)
    assert hit["seat"] == 1 and hit["combination"] == combination
    assert hit["amount"] == (meter_at_hit if amount is None else amount)
    assert hit["verified"] is False
    (event,) = events(h, "hit_pending")
    assert event["amount"] == hit["amount"] and event["cards"][:2] == list(first_two)
    assert [a.kind for a in h.alerts("jackpot_pending")] == ["jackpot_pending"]


def test_no_hit_without_a_chip_or_without_aces_first_pt2001_r42() -> None:
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[3])
    deal(h, "5C", "AH", "KD", "9S", "AD", "AS", "7D")  # seat 1 (no chip) two aces; seat 3 K then A
    assert pending(h) == []
    assert h.records("jackpot_evaluated")[-1]["cards"] == {"3": ["KD"]}  # decided at the first card


def test_two_winners_smaller_prize_first_top_takes_the_remainder_pt2001_r50() -> None:
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[1, 3])
    meter = SEED + 140
    deal(h, "5C", "AH", "AS", "9S", "AD", "AC", "7D")  # seat 1 AH AD, seat 3 AS AC
    h.dealer("split")  # seat 1 splits the aces: the next two cards are its 3rd and 4th (PT-2001 r.42)
    deal(h, "AH", "AD")
    assert pending(h) == []  # seat 3 (two aces) may still draw: its third card could count (r.42)
    h.dealer("stand")
    hits = pending(h)
    assert [(x["seat"], x["combination"], x["amount"]) for x in hits] == [
        (3, "TWO_ACES_MIXED", 25 * BET),  # r.50a: fixed prizes first, smallest to largest
        (1, "FOUR_ACES_ONE_COLOUR", meter - 25 * BET),  # r.43a: the remainder after the smaller prize
    ]
    top, small = hits[1]["hit_id"], hits[0]["hit_id"]
    for hit_id in (top, small):
        h.sup("jackpot_verify", hit_id=hit_id)
    with pytest.raises(Rejected, match=r"r\.50a"):
        h.sup("jackpot_pay", hit_id=top)
    h.sup("jackpot_pay", hit_id=small)
    h.sup("jackpot_pay", hit_id=top)
    assert [e["hit_id"] for e in events(h, "paid")] == [small, top]
    # Reset: seed + the reserve pool (2 x 10 % of 1.00) + the carried sub-cent (2 x 0.70 = 1.40: none).
    (reset,) = [e for e in events(h, "reset") if e.get("reason") == "top prize paid"]
    assert reset["meter"] == SEED + 20
    assert meter_units(h) == SEED * UNIT + 2 * BET * 1000
    assert pending(h) == [] and last_state(h, "jackpot")["playable"] is True


def test_pending_verify_pay_reset_and_the_hand_stays_flagged_pt2001_r49() -> None:
    h = make_table()
    rid = start_round(h, {1: 500, 3: 500}, chips=[1])
    deal(h, "5C", "AS", "8D", "9S", "AS", "9D", "7D")
    h.dealer("hit")
    deal(h, "AS")  # three aces of spades: 2,500 x
    h.dealer("stand")
    (hit,) = pending(h)
    hit_id = hit["hit_id"]
    assert last_state(h, "round")["jackpot_hits"][0]["seat"] == 1  # r.49: state/round shows the hand
    state = last_state(h, "jackpot")
    assert state["flagged_seats"] == [1] and state["playable"] is False
    assert "r.49" in state["reason"]
    finish_round(h)
    # Still pending in the next round: no jackpot bets (the meter is frozen), the hand stays flagged.
    with pytest.raises(Rejected, match=r"r\.49"):
        h.sup("close_table")
    h.dealer("place_bet", seat=2, amount=500)
    chip(h, 2)
    assert events(h, "chip_refused")[-1]["reason"] == "unplayable"
    with pytest.raises(Rejected, match="verified"):
        h.sup("jackpot_pay", hit_id=hit_id)
    with pytest.raises(Rejected, match="no pending jackpot hit 99"):
        h.sup("jackpot_verify", hit_id=99)
    before = meter_units(h)
    h.sup("jackpot_verify", hit_id=hit_id, user="inspector-rui")
    assert events(h, "verified")[-1] == {
        "action": "verified",
        "hit_id": hit_id,
        "seat": 1,
        "round_id": rid,
        "by": "inspector-rui",
    }
    h.sup("jackpot_pay", hit_id=hit_id)
    assert meter_units(h) == before - 2500 * BET * UNIT
    assert events(h, "paid")[-1]["amount"] == 2500 * BET
    assert not [e for e in events(h) if e["action"] == "reset" and e.get("reason") == "top prize paid"]
    assert last_state(h, "jackpot")["playable"] is True and pending(h) == []
    pays = [r for r in h.records("jackpot") if r["kind"] == "pay"]
    assert pays[-1]["by"] == "inspector-ana" and pays[-1]["amount"] == 2500 * BET


def test_rejected_hit_leaves_the_meter_unchanged_pt2001_r49() -> None:
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[1])
    deal(h, "5C", "AH", "8D", "9S", "AS", "9D", "7D")
    h.dealer("stand")
    (hit,) = pending(h)
    before = meter_units(h)
    h.sup("jackpot_verify", hit_id=hit["hit_id"], valid=False, reason="card misread by the reader")
    assert meter_units(h) == before and pending(h) == []
    assert events(h, "rejected")[-1]["reason"] == "card misread by the reader"


def test_correction_is_authorised_recorded_with_who_and_why_between_rounds() -> None:
    """Dual control: one supervisor asks, a different one confirms; both names, the reason, old and new meter
    journaled and published, a critical alert to the floor."""
    h = make_table()
    with pytest.raises(Rejected, match="reason"):
        h.sup("jackpot_correct", value=SEED + 5000)
    step = h.sup(
        "jackpot_correct", user="inspector-rui", value=SEED + 5000, reason="meter restored from the log"
    )
    cid = step.result["correction_id"]
    assert meter_units(h) == SEED * UNIT  # nothing changed yet
    assert events(h, "correction_requested")[-1]["by"] == "inspector-rui"
    with pytest.raises(Rejected, match="different supervisor"):
        h.sup("jackpot_correct_confirm", user="inspector-rui", correction_id=cid)
    h.sup("jackpot_correct_confirm", user="inspector-ana", correction_id=cid)
    assert events(h, "correction")[-1] == {
        "action": "correction",
        "correction_id": cid,
        "by": "inspector-rui",
        "confirmed_by": "inspector-ana",
        "reason": "meter restored from the log",
        "old_meter": SEED,
        "meter": SEED + 5000,
    }
    rec = [r for r in h.records("jackpot") if r["kind"] == "correct"][-1]
    assert (rec["who"], rec["confirmed_by"], rec["delta_units"]) == (
        "inspector-rui",
        "inspector-ana",
        5000 * UNIT,
    )
    assert [a.severity for a in h.alerts("jackpot_correction")] == ["critical"]
    with pytest.raises(Rejected, match="no pending correction"):  # confirmed once
        h.sup("jackpot_correct_confirm", user="inspector-bo", correction_id=cid)
    start_round(h, {1: 500})
    with pytest.raises(Rejected, match="between rounds"):
        h.sup("jackpot_correct", value=SEED, reason="during a round")
    with pytest.raises(Rejected, match="supervisor"):
        h.apply(inputs.SupervisorInput("d1", "jackpot_correct", {}, "dealer"))


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (SEED - 1, "below the seed"),  # PT-2001 r.44
        (10**20, "from 0 to"),
        (2**63, "from 0 to"),
        (-5, "from 0 to"),
        (True, "from 0 to"),
        (SEED + 2_000_000, "exceeds the maximum"),  # more than correction_max_change
    ],
)
def test_correction_is_bounded_pt2001_r44(value: Any, why: str) -> None:
    h = make_table()
    with pytest.raises(Rejected, match=why):
        h.sup("jackpot_correct", value=value, reason="attempt")
    assert meter_units(h) == SEED * UNIT


def test_correction_above_the_ceiling_and_expired_confirmation_are_refused() -> None:
    h = Harness()
    h.core = TableCore(load_profile, jackpot=TableJackpot())
    cfg = {**CFG, "correction_ceiling": SEED + 100, "correction_confirm_s": 5}
    h.sup("open_table", profile="pt-2001", shuffler="continuous", jackpot=cfg)
    with pytest.raises(Rejected, match="above the ceiling"):
        h.sup("jackpot_correct", value=SEED + 101, reason="too high")
    cid = h.sup("jackpot_correct", value=SEED + 100, reason="ok").result["correction_id"]
    with pytest.raises(Rejected, match="awaits its confirmation"):
        h.sup("jackpot_correct", user="inspector-bo", value=SEED + 50, reason="second")
    h.now += 10  # past correction_confirm_s
    with pytest.raises(Rejected, match="expired"):
        h.sup("jackpot_correct_confirm", user="inspector-bo", correction_id=cid)
    assert meter_units(h) == SEED * UNIT


# ---- availability (PT-2001 r.41) and enabling (r.38) --------------------------------------------------


def test_unplayable_while_the_display_is_lost_pt2001_r41() -> None:
    h = make_table()
    display_link(h, False)
    state = last_state(h, "jackpot")
    assert state["playable"] is False and state["display_connected"] is False
    assert "display" in state["reason"]
    assert [a.kind for a in h.alerts("display_fault")] == ["display_fault"]
    h.dealer("place_bet", seat=1, amount=500)
    chip(h, 1)
    assert events(h, "chip_refused")[-1]["reason"] == "unplayable"
    before = meter_units(h)
    h.dealer("no_more_bets")
    assert meter_units(h) == before and h.records("round_started")[-1]["jackpot_chips"] == []
    assert len(events(h, "chip_refused")) == 1  # told once, at the slot
    finish_round(h)
    display_link(h, True)
    assert last_state(h, "jackpot")["playable"] is True
    start_round(h, {1: 500}, chips=[1])  # the chip still in the slot is collected now
    assert meter_units(h) == before + PER_CHIP_UNITS
    m = make_table(mode="manual", display=False)
    m.dealer("place_bet", seat=1, amount=500)
    with pytest.raises(Rejected, match="display"):
        m.dealer("jackpot_chip", seat=1)


def test_restart_needs_the_display_to_answer_again() -> None:
    h = make_table()
    h.apply(inputs.Restart())
    assert last_state(h, "jackpot")["display_connected"] is False


def test_jackpot_needs_config_and_profile_pt2001_r38() -> None:
    h = make_table(profile="mo-2004")
    state = last_state(h, "jackpot")
    assert state["enabled"] is False and "mo-2004" in state["reason"]
    h.dealer("place_bet", seat=1, amount=h.core.tp.min_bet)
    chip(h, 1)
    assert events(h, "chip_refused")[-1]["reason"] == "unplayable"
    h.dealer("no_more_bets")  # the round goes on without a jackpot bet
    assert h.records("round_started")[-1]["jackpot_chips"] == []
    with pytest.raises(Rejected, match=r"jackpot configuration refused: jackpot\.seed"):
        bad = Harness()
        bad.core = TableCore(load_profile, jackpot=TableJackpot())
        bad.sup("open_table", profile="pt-2001", shuffler="continuous", jackpot={**CFG, "seed": 5})


# ---- recovery: snapshot + journaled inputs give the same meter -----------------------------------------


def test_replaying_the_inputs_rebuilds_the_jackpot_exactly() -> None:
    inputs: list[tuple[dict[str, Any], float]] = []
    h = make_table()
    real_apply = h.core.apply

    def recording(inp: dict[str, Any], now: float):
        step = real_apply(inp, now)
        inputs.append((inp, now))
        return step

    h.core.apply = recording  # type: ignore[method-assign]
    snap = h.core.snapshot()
    start_round(h, {1: 500, 3: 500}, chips=[1, 3])
    deal(h, "5C", "AH", "AS", "9S", "AD", "KC", "7D")
    h.dealer("stand")
    display_link(h, False)
    chip(h, 2)
    mid = h.core.snapshot()
    cut = len(inputs)
    h.sup("jackpot_verify", hit_id=pending(h)[0]["hit_id"])
    display_link(h, True)
    for from_snap, todo in ((snap, inputs), (mid, inputs[cut:])):
        other = TableCore(load_profile, jackpot=TableJackpot())
        other.restore(json.loads(json.dumps(from_snap)))  # as the journal stores it
        for inp, now in todo:
            other.apply(inp, now)
        assert other.jackpot.snapshot() == h.core.jackpot.snapshot()
        assert other.snapshot() == h.core.snapshot()


def test_a_rejected_input_leaves_the_jackpot_untouched() -> None:
    """A refused supervisor action changes nothing and journals nothing (the core restores its snapshot)."""
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[1])
    deal(h, "5C", "AH", "8D", "9S", "AS", "9D", "7D")
    h.dealer("stand")
    finish_round(h)
    (hit,) = pending(h)
    before = h.core.snapshot()
    for args in ({"hit_id": hit["hit_id"]}, {"hit_id": "1"}, {}):
        with pytest.raises(Rejected):
            h.sup("jackpot_pay", **args)  # not verified / not an integer / missing
    with pytest.raises(Rejected, match="pending"):
        h.sup("jackpot_correct", value=0, reason="a correction may not hide a pending hit")
    assert h.core.snapshot() == before


def test_parameters_change_only_at_an_opening_and_never_under_a_pending_hit_pt2001_r40() -> None:
    """A table opening is between rounds: changed [jackpot] parameters are applied there (``reconfigure``);
    the running meter is not touched; refused while a hit waits (r.49) or for another currency."""
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[1])
    seat = jp(h)
    profile = h.core.rules_profile
    before = meter_units(h)
    fx = seat.on_open_table({"jackpot": {**CFG, "bet_value": 200, "seed": 2_000_000}}, profile)
    (event,) = [e.data for e in messages(fx)]
    assert event == {
        "action": "reconfigured",
        "changes": {"bet_value": {"old": BET, "new": 200}, "seed": {"old": SEED, "new": 2_000_000}},
    }
    assert meter_units(h) == before and jp(h).meter.bet_value == 200
    with pytest.raises(Rejected, match="currency"):
        seat.on_open_table({"jackpot": {**CFG, "currency": "USD"}}, profile)
    with pytest.raises(Rejected, match="pending"):
        deal(h, "5C", "AH", "8D", "9S", "AS", "9D", "7D")
        h.dealer("stand")
        assert pending(h)
        seat.on_open_table({"jackpot": CFG}, profile)
    fx = seat.on_open_table({"jackpot": None}, profile)  # the config file says no jackpot any more
    assert jp(h).enabled is False and jp(h).meter is not None  # the meter (and its pending hit) is kept


@pytest.mark.parametrize(
    ("action", "data"),
    [
        ("contribution", {"round_id": "r", "seats": [1], "chips": 1, "meter": 5, "currency": "EUR", "x": 1}),
        ("paid", {"hit_id": 1, "seat": 1, "round_id": "r", "by": "a", "meter": 1}),  # no amount
        ("chip_refused", {"seat": 1, "reason": "late", "message": "m", "amount": -1}),
    ],
)
def test_jackpot_event_schema_is_strict(action: str, data: dict[str, Any]) -> None:
    from controller.mqtt.schemas import MessageInvalid

    payload = {"event_id": 1, "ts": "2026-01-01T00:00:00.000Z", "type": "jackpot", "table": "T1"}
    with pytest.raises(MessageInvalid):
        validate_message(
            "events/jackpot", json.dumps({**payload, "data": {"action": action, **data}}).encode()
        )
