"""Cross-check of the progressive jackpot against PT-2001 r.38-50 (RULES.md section 7), on the real code.

Table tests drive the pure table core through the Harness with real cards; meter tests use the pure API; the
maths is checked through ``tablectl jackpot-math`` against an enumeration written here. Every jackpot message a
table test produces is validated against its strict MQTT schema (``published`` fixture).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from fractions import Fraction
from itertools import permutations, product
from typing import Any

import pytest
from support.jackpot import BET, CFG, SEED, jackpot_messages_valid  # noqa: F401 (fixture)

from controller.effects import Rejected
from controller.jackpot import JackpotError
from controller.jackpot import meter as mt
from controller.jackpot.config import JackpotConfig
from controller.jackpot.hits import Combination, allocate, evaluate
from controller.jackpot.table import TableJackpot
from controller.rules.profiles import load_profile
from controller.table import inputs
from controller.table.core import TableCore
from controller.table.messages import messages
from controller.words import money
from tablebench.table_testing import Harness

UNIT = mt.UNIT


# ---- helpers (the table as the service builds it) --------------------------------------------------------


def make_table() -> Harness:
    h = Harness()
    h.core = TableCore(load_profile, jackpot=TableJackpot())
    h.open_continuous(jackpot=dict(CFG))
    h.apply(inputs.JackpotDisplay(True))
    assert h.core.state == "betting"
    return h


def jp(h: Harness) -> TableJackpot:
    assert isinstance(h.core.jackpot, TableJackpot)
    return h.core.jackpot


def meter(h: Harness) -> mt.MeterState:
    m = jp(h).meter
    assert m is not None
    return m


def events(h: Harness, action: str) -> list[dict[str, Any]]:
    return [e.data for e in messages(h.effects) if e.topic == "events/jackpot" and e.data["action"] == action]


def pending(h: Harness) -> list[dict[str, Any]]:
    docs = [e.data for e in messages(h.effects) if e.topic == "state/jackpot"]
    return docs[-1]["pending_hits"]


def start_round(h: Harness, bets: dict[int, int], chips: list[int]) -> None:
    for seat, amount in bets.items():
        h.dealer("place_bet", seat=seat, amount=amount)
    for seat in chips:
        h.apply(inputs.GpioInput(f"chip_slot_{seat}", True))
    h.dealer("no_more_bets")


def deal(h: Harness, *cards: str) -> None:
    for code in cards:
        assert h.core.round.engine.expected_recipient() is not None, f"no card expected before {code}"
        h.card(code)


def two_winners(h: Harness) -> tuple[int, int, int]:
    """Seats 1 and 3 play a chip: seat 1 AH AD split + AH AD (four red aces, r.43a), seat 3 AS AC (25 x,
    r.43e). Returns (small hit id, top hit id, meter shown at the hit)."""
    start_round(h, {1: 500, 3: 500}, chips=[1, 3])
    deal(h, "5C", "AH", "AS", "9S", "AD", "AC", "7D")  # burn, s1, s3, dealer, s1, s3, dealer
    h.dealer("split")
    deal(h, "AH", "AD")
    h.dealer("stand")
    small, top = pending(h)
    assert (small["combination"], top["combination"]) == ("TWO_ACES_MIXED", "FOUR_ACES_ONE_COLOUR")
    return small["hit_id"], top["hit_id"], meter(h).display_value


# Every jackpot document and event these tests produce is valid against its (strict) schema.
pytestmark = pytest.mark.usefixtures("jackpot_messages_valid")


# ---- r.43a / r.50: the top prize is the remainder after the smaller prizes PAID --------------------------


def test_rejected_smaller_prize_is_not_taken_off_the_top_remainder_pt2001_r43a_r50a() -> None:
    """PT-2001 r.43a pays "100 % do acumulado ou do respectivo remanescente, após pagos os prémios menores"
    and r.50a pays the remainder to the top combination: a smaller prize that a supervisor rejects is not
    paid, so the top winner gets the whole meter, and the reset starts from the seed (+ reserve) only."""
    h = make_table()
    small, top, shown = two_winners(h)
    assert pending(h)[1]["amount"] == shown - 25 * BET
    h.sup("jackpot_verify", hit_id=small, valid=False, reason="seat 3 cards misread by the reader")
    (hit,) = pending(h)
    assert (hit["hit_id"], hit["amount"]) == (top, shown)  # state/jackpot shows the new award
    (rec,) = [r for r in h.records("jackpot") if r["kind"] == "reject"]
    assert rec["reallocated"] == [{"hit_id": top, "seat": 1, "old": shown - 25 * BET, "new": shown}]
    reserve = meter(h).reserve_units
    sub_cent = meter(h).meter_units - shown * UNIT
    h.sup("jackpot_verify", hit_id=top)
    h.sup("jackpot_pay", hit_id=top)
    assert events(h, "paid")[-1]["amount"] == shown
    assert meter(h).meter_units == SEED * UNIT + reserve + sub_cent  # r.44: the seed again, nothing left over
    meter(h).check_invariants()


def test_tied_top_winner_rejected_the_other_takes_the_whole_remainder_pt2001_r50b() -> None:
    """PT-2001 r.50b: tied top winners share the (remaining) meter; when one of them is found not valid, the
    one left is the only top winner and takes all of it. Fixed prizes stay as they were (r.43b-e)."""
    state = mt.MeterState.initial(JackpotConfig.from_dict({**CFG, "seed": SEED + 1}))
    top = Combination.FOUR_ACES_ONE_COLOUR
    winners = [(2, top), (5, top), (6, Combination.THREE_ACES_MIXED)]
    state, _ = mt.freeze(state, allocate(state, winners), "r1")
    by_seat = {h.seat: h for h in state.pending}
    assert by_seat[6].amount == 250 * BET
    assert (by_seat[2].amount, by_seat[5].amount) == (487_501, 487_500)  # odd cent to the lower seat
    state, records = mt.reject(state, by_seat[2].hit_id, "inspector-ana", "hand 2 misread")
    by_seat = {h.seat: h for h in state.pending}
    assert by_seat[6].amount == 250 * BET and by_seat[5].amount == SEED + 1 - 250 * BET
    assert records[0].data["reallocated"] == [
        {"hit_id": by_seat[5].hit_id, "seat": 5, "old": 487_500, "new": SEED + 1 - 250 * BET}
    ]
    state, _ = mt.pay(state, by_seat[6].hit_id, "inspector-ana")
    state, records = mt.pay(state, by_seat[5].hit_id, "inspector-ana")
    assert [r.kind for r in records] == ["pay", "reset"]
    assert state.paid_units == (SEED + 1) * UNIT and state.meter_units == (SEED + 1) * UNIT
    state.check_invariants()


@pytest.mark.parametrize(
    "winners",
    [
        [(1, "TWO_ACES_MIXED"), (2, "TWO_ACES_SUITED"), (3, "FOUR_ACES_ONE_COLOUR")],
        [(1, "THREE_ACES_MIXED"), (4, "FOUR_ACES_ONE_COLOUR"), (7, "FOUR_ACES_ONE_COLOUR")],
        [(1, "THREE_ACES_SUITED"), (2, "THREE_ACES_SUITED"), (3, "TWO_ACES_MIXED")],
        [(s, "THREE_ACES_SUITED") for s in range(1, 6)] + [(6, "TWO_ACES_SUITED")],  # capped group
    ],
)
def test_any_settlement_order_pays_every_cent_once_pt2001_r43_r50(winners: list[tuple[int, str]]) -> None:
    """PT-2001 r.43, r.50: whatever is rejected, and in any order r.50a allows, the paid amounts plus what
    stays on the meter equal the meter at the hit exactly; with a top winner paid the whole displayed meter
    is paid (only the sub-cent stays) and the meter restarts at the seed + reserve (r.44)."""
    cfg = JackpotConfig.from_dict(CFG)
    base = mt.MeterState.initial(cfg)
    base, _ = mt.contribute(base, 7, "r0")  # 7 x 0.70 on the meter, 7 x 0.10 in the reserve: sub-cent 0
    base, _ = mt.contribute(base, 3, "r0b")
    combos = [(s, Combination[c]) for s, c in winners]
    start, _ = mt.freeze(base, allocate(base, combos), "r1")
    ids = [h.hit_id for h in start.pending]
    for rejected in [set()] + [{i} for i in ids]:
        for order in permutations(ids):
            state, paid = start, 0
            for hit_id in order:
                if hit_id in rejected:
                    state, _ = mt.reject(state, hit_id, "sv", "not valid")
                    continue
                if any(h.top and h.hit_id in rejected for h in state.pending) and _top(state, hit_id):
                    break  # the table pays a top share only once every tied top is verified (r.50b)
                try:
                    amount = next(x.amount for x in state.pending if x.hit_id == hit_id)
                    state, _ = mt.pay(state, hit_id, "sv")
                except JackpotError as exc:
                    assert "r.50a" in str(exc)
                    break
                paid += amount
            else:
                state.check_invariants()
                assert state.pending == ()
                if any(h.top and h.hit_id not in rejected for h in start.pending):
                    assert paid == base.display_value  # r.43a: 100 % of the meter, smaller prizes included
                    assert (
                        state.meter_units == base.meter_units - paid * UNIT + SEED * UNIT + base.reserve_units
                    )
                else:
                    assert state.meter_units == base.meter_units - paid * UNIT
                    assert paid <= base.display_value


def _top(state: mt.MeterState, hit_id: int) -> bool:
    return any(h.top for h in state.pending if h.hit_id == hit_id)


# ---- r.49: verification, payment once, clear refusals ------------------------------------------------------


def test_a_hit_is_paid_once_even_across_a_restore_and_the_refusal_says_why_pt2001_r49() -> None:
    """PT-2001 r.49: the hand stays until paid, then it is settled. A second pay (or verify) of the same hit,
    also on a core rebuilt from the journal's snapshot, is refused naming the payment and the rule; the meter
    is exactly the same after the restore."""
    h = make_table()
    small, top, _ = two_winners(h)
    h.sup("jackpot_verify", hit_id=small)
    h.sup("jackpot_pay", hit_id=small, user="inspector-rui")
    other = TableCore(load_profile, jackpot=TableJackpot())
    other.restore(json.loads(json.dumps(h.core.snapshot())))  # as the journal stores it
    assert other.jackpot.meter == meter(h)
    for core in (h.core, other):
        before = core.snapshot()
        for action in ("jackpot_pay", "jackpot_verify"):
            inp = inputs.supervisor("inspector-ana", action, {"hit_id": small})
            with pytest.raises(Rejected, match=r"already paid by inspector-rui.*PT-2001 r\.49"):
                core.apply(inp, h.now + 1)
        assert core.snapshot() == before
    assert [e["hit_id"] for e in events(h, "paid")] == [small]
    assert [h["hit_id"] for h in pending(h)] == [top]


def test_unknown_or_malformed_hit_id_is_refused_citing_the_rule_pt2001_r49() -> None:
    """PT-2001 r.49: only a pending hit can be verified or paid; an id never issued or not an integer is
    refused with the reason and the rule, and nothing changes."""
    h = make_table()
    small, top, _ = two_winners(h)
    before = h.core.snapshot()
    with pytest.raises(Rejected, match=r"no pending jackpot hit 99 \(pending: \[1, 2\]; PT-2001 r\.49\)"):
        h.sup("jackpot_verify", hit_id=99)
    for bad in ("1", None, True, 1.0):
        with pytest.raises(Rejected, match=r"hit_id must be an integer.*r\.49"):
            h.sup("jackpot_pay", hit_id=bad)
    with pytest.raises(Rejected, match=r"must be verified by a supervisor first \(PT-2001 r\.49\)"):
        h.sup("jackpot_pay", hit_id=small)
    assert h.core.snapshot() == before
    assert sorted(x["hit_id"] for x in pending(h)) == sorted([small, top])


def test_pay_with_a_wrong_amount_is_refused_pt2001_r43() -> None:
    """PT-2001 r.43: the award is the combination's amount. A ``jackpot_pay`` that states another amount
    (or a non-integer one) is refused with the award and the rule; with the right amount it pays."""
    h = make_table()
    small, _, _ = two_winners(h)
    h.sup("jackpot_verify", hit_id=small)
    before = h.core.snapshot()
    for wrong in (25 * BET + 1, 25 * BET - 1, "2500", 2500.0, True):
        award = re.escape(money(25 * BET, "EUR"))  # in money, the combination in words (issue 30)
        with pytest.raises(Rejected, match=rf"amount .* is not the award of {award} \(two aces of .*r\.43"):
            h.sup("jackpot_pay", hit_id=small, amount=wrong)
    assert h.core.snapshot() == before
    h.sup("jackpot_pay", hit_id=small, amount=25 * BET)
    assert events(h, "paid")[-1]["amount"] == 25 * BET


def test_verification_and_payment_need_a_supervisor_pt2001_r49() -> None:
    """PT-2001 r.49 (the hand stays until paid) with the house rule that a chief inspector verifies: a dealer
    or a technician can neither verify, reject nor pay a hit; the meter and the pending hit are unchanged."""
    h = make_table()
    small, _, _ = two_winners(h)
    before = h.core.snapshot()
    for role in ("dealer", "technician", ""):
        for action, args in (
            ("jackpot_verify", {"hit_id": small}),
            ("jackpot_verify", {"hit_id": small, "valid": False, "reason": "x"}),
            ("jackpot_pay", {"hit_id": small}),
        ):
            inp = inputs.SupervisorInput("d1", action, args, role or "nobody")
            with pytest.raises(Rejected, match=r"supervisor.*PT-2001 r\.49"):
                h.apply(inp)
    assert h.core.snapshot() == before
    assert not events(h, "verified") and not events(h, "paid")


# ---- r.40, r.42-44: the maths through the CLI, against an enumeration made here ---------------------------


def _enumerate(decks: int) -> dict[str, Fraction]:
    """Every ordered draw of 4 cards from ``decks`` full decks, by card class, classified by ``evaluate``."""
    classes = {"AS": decks, "AH": decks, "AD": decks, "AC": decks, "9S": 48 * decks}
    out: dict[str, Fraction] = {}
    for seq in product(classes, repeat=4):
        left, p, total = dict(classes), Fraction(1), 52 * decks
        for card in seq:
            p *= Fraction(left[card], total)
            left[card] -= 1
            total -= 1
        combo = evaluate(list(seq)) if p else None
        if combo is not None:
            out[combo.name] = out.get(combo.name, Fraction(0)) + p
    return out


@pytest.mark.parametrize("decks", [4, 6, 8])
def test_jackpot_math_cli_matches_an_enumeration_pt2001_r42_r43(decks: int) -> None:
    """PT-2001 r.42-43: `tablectl jackpot-math --json` gives exactly the probability of each combination
    (first four cards, highest only) and the fixed-prize EV 25/100/250/2500 x of an enumeration."""
    out = subprocess.run(
        [sys.executable, "-m", "controller.cli", "jackpot-math", "--decks", str(decks), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(out.stdout)
    expected = _enumerate(decks)
    got = {name: Fraction(c["fraction"]) for name, c in doc["combinations"].items()}
    assert got == {c.name: expected.get(c.name, Fraction(0)) for c in Combination}
    fixed = sum(p * Combination[n].multiplier for n, p in expected.items() if Combination[n].multiplier)
    assert Fraction(doc["fixed_prizes_ev_bets"]["fraction"]) == fixed


def test_jackpot_math_cli_refuses_a_negative_share_pt2001_r40() -> None:
    """PT-2001 r.40: the increment is a share of the bet; a negative share is refused even if the two shares
    still sum to 0..100 %."""
    args = ["--decks", "6", "--bet-value", "100", "--seed", "1000000", "--increment-bp", "-100"]
    out = subprocess.run(
        [sys.executable, "-m", "controller.cli", "jackpot-math", *args, "--reserve-bp", "200"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "basis points" in out.stderr and not out.stdout


def test_tied_top_winners_on_the_table_share_only_after_both_are_verified_pt2001_r50b() -> None:
    """PT-2001 r.50b: two seats with four red aces share the meter. A share is not paid while the other top
    winner is unverified (it could still be rejected); once one is rejected, the other takes the whole meter,
    which is then reset to the seed + reserve (r.44)."""
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[1, 3])
    deal(h, "5C", "AH", "AD", "9S", "AD", "AH", "7D")  # burn, s1, s3, dealer, s1, s3, dealer
    h.dealer("split")
    deal(h, "AH", "AD")
    h.dealer("split")
    deal(h, "AD", "AH")
    one, three = pending(h)
    shown = meter(h).display_value
    assert {one["combination"], three["combination"]} == {"FOUR_ACES_ONE_COLOUR"}
    assert one["amount"] + three["amount"] == shown and abs(one["amount"] - three["amount"]) <= 1
    h.sup("jackpot_verify", hit_id=one["hit_id"])
    with pytest.raises(Rejected, match=rf"verify the other top winner\(s\) \[{three['hit_id']}\].*r\.50b"):
        h.sup("jackpot_pay", hit_id=one["hit_id"])
    h.sup("jackpot_verify", hit_id=three["hit_id"], valid=False, reason="seat 3 re-split misread")
    (left,) = pending(h)
    assert left["amount"] == shown
    reserve, sub_cent = meter(h).reserve_units, meter(h).meter_units - shown * UNIT
    h.sup("jackpot_pay", hit_id=one["hit_id"], amount=shown)
    assert meter(h).meter_units == SEED * UNIT + reserve + sub_cent
