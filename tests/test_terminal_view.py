"""The pit terminal's pure projections: money formatting, which inputs are enabled and have buttons, the chips
offered, the dealer's results indicator (PT-ONLINE-2015 r.4c), the last round's essentials (r.31) and the alert
order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.terminal.pit_dealer import CHIPS, chips_within
from controller.terminal.pit_keys import DEALER_KEYS
from controller.terminal.pit_rules import shown_inputs
from controller.terminal.pit_summary import settled_summary
from controller.terminal.view import (
    DealerResults,
    alert_age,
    alert_sort_key,
    enabled_inputs,
    hand_text,
    money_in_text,
    next_hint,
    settlement_lines,
    turn_text,
)
from controller.words import card_face, hand_label, money


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_money_is_exact_integer_minor_units(cents: int) -> None:
    text = money(cents)
    assert int(text.replace(",", "").replace(".", "")) == cents
    assert text.split(".")[-1].isdigit() and len(text.split(".")[-1]) == 2


def test_money_examples() -> None:
    assert money(123450) == "1,234.50" and money(-5) == "-0.05" and money(None) == "—"


def test_nothing_enabled_while_the_controller_or_broker_is_unreachable() -> None:
    table = {"state": "betting", "dealer_inputs": ["clear_bet", "no_more_bets", "place_bet"]}
    assert enabled_inputs("offline", True, table) == set()
    assert enabled_inputs("online", False, table) == set()
    assert enabled_inputs("online", True, table) == {"place_bet", "clear_bet", "no_more_bets"}


def test_the_terminal_enables_exactly_what_the_controller_publishes() -> None:
    """One source: state/table ``dealer_inputs`` (the core's machine and rules engine); the state name decides
    nothing, a name that is not a dealer command is ignored, no list enables nothing."""
    assert enabled_inputs("online", True, {"state": "betting"}) == set()
    assert enabled_inputs("online", True, {"state": "settled", "dealer_inputs": []}) == set()
    assert enabled_inputs("online", True, {"state": "jammed", "dealer_inputs": ["hit"]}) == {"hit"}
    hostile = {"state": "players", "dealer_inputs": ["hit", "stand", "cut_the_cards", 7, None, {"x": 1}]}
    assert enabled_inputs("online", True, hostile) == {"hit", "stand"}
    assert enabled_inputs("online", True, {"dealer_inputs": "hit"}) == set()


def test_the_core_publishes_the_dealer_inputs_it_accepts() -> None:
    """Every published input is accepted when sent (with valid arguments); every other dealer input is refused."""
    from controller.actions import DEALER_ACTIONS
    from controller.effects import Rejected
    from tablebench.table_testing import Harness

    h = Harness()
    assert h.core.view()["dealer_inputs"] == []
    h.open_continuous()
    assert h.core.view()["dealer_inputs"] == ["place_bet"]
    h.dealer("place_bet", seat=1, amount=1000)
    assert h.core.view()["dealer_inputs"] == ["clear_bet", "no_more_bets", "place_bet"]
    h.dealer("no_more_bets")
    for code in ("9S", "8H", "7D", "6C", "5S", "4H"):  # the deal (after the shoe's burn)
        if h.core.state == "players":
            break
        h.card(code)
    published = h.core.view()["dealer_inputs"]
    assert h.core.state == "players" and "stand" in published and "place_bet" not in published
    for action in DEALER_ACTIONS:
        if action in published:
            continue
        snap = h.core.snapshot()
        try:
            h.dealer(action, seat=1, amount=1000, hand=0)
        except Rejected:
            pass
        else:
            raise AssertionError(f"{action} was accepted but not published in dealer_inputs")
        assert h.core.snapshot() == snap
    h.dealer("stand", seat=1, hand=0)


def test_the_chip_selector_stays_within_the_tables_published_limits_pt2001_r37() -> None:
    """The chips come from state/table ``limits`` only (the session's, which the configuration may narrow);
    without a session every chip; a hostile value is ignored; no chip between the limits: the minimum."""
    assert chips_within({"min_bet": 500, "max_bet": 15000}) == (500, 1000, 2500, 5000, 10000)
    assert chips_within(None) == CHIPS and chips_within("500..15000") == CHIPS
    assert chips_within({"min_bet": True, "max_bet": -1}) == CHIPS
    assert chips_within({"min_bet": 300, "max_bet": 400}) == (300,)
    # PT-2001 r.14: every bet a multiple of the minimum; a chip that is not one would make a refused bet
    assert chips_within({"min_bet": 1000, "max_bet": 100000}) == (1000, 5000, 10000, 50000, 100000)


def test_buttons_laid_out_follow_the_tables_documents() -> None:
    """What the table's documents say decides the buttons: the jackpot chip key only where state/jackpot says
    the chips are entered by hand (PT-2001 r.41b), the cut key at a batch shoe (r.8); the one fallback, the
    profile's optional decisions (no "Five cards" on PT-2001, MO-2004 art.19 has it), never hides an input the
    table lists in ``dealer_inputs``."""
    pt = {"profile": "pt-2001", "shuffler": "continuous"}
    shown = shown_inputs(pt, {}, {"enabled": True, "mode": "automatic"}, set())
    assert "five_card" not in shown and "jackpot_chip" not in shown and "cut" not in shown
    assert {"hit", "stand", "double", "split", "surrender", "insurance", "place_bet", "next_round"} <= shown
    assert "jackpot_chip" in shown_inputs(pt, {}, {"enabled": True, "mode": "manual"}, set())
    assert "jackpot_chip" not in shown_inputs(pt, {}, {"enabled": False, "mode": "manual"}, set())
    assert "cut" in shown_inputs({**pt, "shuffler": "batch"}, {}, {}, set())
    assert "five_card" in shown_inputs({}, {"profile": "mo-2004"}, {}, set())  # the service's state/software
    assert "five_card" in shown_inputs(pt, {}, {}, {"five_card"})  # the table's word wins
    for hostile in (
        "../x",
        ["pt-2001"],
        {"a": 1},
        "no-such-profile",
    ):  # unknown: every decision has its button
        assert set(DEALER_KEYS) - {"jackpot_chip", "cut"} <= shown_inputs({"profile": hostile}, {}, {}, set())
    assert shown_inputs(pt, {}, {}, {"not_an_input"}) == shown_inputs(pt, {}, {}, set())


@given(st.lists(st.integers(min_value=17, max_value=26), max_size=30), st.integers(min_value=1, max_value=12))
def test_dealer_results_keep_the_last_n_newest_first_pt_online_2015_r4c(totals: list[int], size: int) -> None:
    ind = DealerResults(size=size)
    for i, total in enumerate(totals):
        ind.add({"round_id": f"r{i}", "dealer_total": total, "dealer_bust": total > 21})
        ind.add({"round_id": f"r{i}", "dealer_total": total})  # a QoS 1 redelivery counts once
    expected = [f"{t} bust" if t > 21 else str(t) for t in reversed(totals)][:size]
    assert list(ind.entries) == expected


def test_last_round_essentials_pt_online_2015_r31() -> None:
    lines = settlement_lines(
        {
            "round_id": "R1",
            "dealer_cards": ["KD", "KS"],
            "dealer_total": 20,
            "hands": [{"seat": 2, "hand": 0, "cards": ["6S", "TS"], "total": 16, "stake": 1000,
                       "outcome": "lose", "net": -1000}],
        }
    )  # fmt: skip
    assert lines == ["Round R1", "Dealer: K♦ K♠ = 20", "Seat 2: 6♠ 10♠ = 16  stake 10.00  loses  net -10.00"]
    assert settlement_lines({}) == ["no round settled yet"]


def test_the_last_rounds_net_per_seat_is_the_settlements_pt_online_2015_r31() -> None:
    """The net per seat is the engine's (hands, insurance, side bets, prizes): a seat that lost its hand (-10.00)
    and won a side bet (+15.00) is +5.00, not -10.00; values that are not integers are left out."""
    settlement = {
        "dealer_total": 20,
        "hands": [{"seat": 3, "hand": 0, "net": -1000}, {"seat": 10, "hand": 0, "net": 500}],
        "side_bets": [{"seat": 3, "net": 1500}],
        "seat_nets": {"10": 500, "3": 500, "4": True, "5": "9"},
    }
    assert (
        str(settled_summary(settlement, "EUR"))
        == "Last round, dealer 20, net in EUR: Seat 3 +5.00 · Seat 10 +5.00"
    )


def test_hole_card_stays_hidden_pt2001_r17() -> None:
    assert card_face("??") == "(face down)"
    # the face-down card reveals nothing: no total beside it (issue 42)
    assert hand_text({"cards": ["AS", "??"], "total": 11, "soft": True}) == "A♠ (face down)"


def test_alerts_most_severe_then_escalated_then_newest_first() -> None:
    alerts = [
        {"alert_id": 1, "severity": "warning", "raised_at": 100.0, "level": 0},
        {"alert_id": 2, "severity": "critical", "raised_at": 50.0, "level": 0},
        {"alert_id": 3, "severity": "critical", "raised_at": 90.0, "level": 0},
        {"alert_id": 4, "severity": "critical", "raised_at": 10.0, "level": 2},
        {"alert_id": 5, "severity": "info", "raised_at": 200.0, "level": 0},
    ]
    assert [a["alert_id"] for a in sorted(alerts, key=alert_sort_key)] == [4, 3, 2, 1, 5]
    assert alert_age(0.0, now=3725.0) == "1h02m" and alert_age(100.0, now=165.0) == "1m05s"


def test_hands_are_numbered_from_one_for_people() -> None:
    assert hand_label(2, 0) == "Seat 2" and hand_label(2, 1) == "Seat 2, hand 2"
    assert hand_label(2, 0, split=True) == "Seat 2, hand 1"
    assert turn_text({"kind": "player", "seat": 3, "hand": 1}) == "Seat 3, hand 2"
    lines = settlement_lines(
        {"round_id": "R", "dealer_cards": [], "dealer_total": 18, "hands": [
            {"seat": 1, "hand": 0, "cards": ["8S", "3D"], "total": 11, "stake": 500, "outcome": "win", "net": 500},
            {"seat": 1, "hand": 1, "cards": ["8H", "TD"], "total": 18, "stake": 500, "outcome": "push", "net": 0},
        ]}
    )  # fmt: skip
    assert lines[2].startswith("Seat 1, hand 1:") and lines[3].startswith("Seat 1, hand 2:")


def test_refusal_amounts_in_the_tables_currency_pt2001_r37() -> None:
    """The controller's refusals carry minor units; the dealer reads money with two decimals."""
    assert (
        money_in_text("bet 50000 outside the table limits 500..15000 (PT-2001 r.37)")
        == "bet 500.00 outside the table limits 5.00 to 150.00 (PT-2001 r.37)"
    )
    assert money_in_text("bet 750 is not a multiple of the minimum 500 (PT-2001 r.14)") == (
        "bet 7.50 is not a multiple of the minimum 5.00 (PT-2001 r.14)"
    )
    # seat numbers, rule numbers and counts stay as they are
    assert money_in_text("seat must be an integer 1..7 (PT-2001 r.2), got 9") == (
        "seat must be an integer 1..7 (PT-2001 r.2), got 9"
    )


def _hint(state: str, **kw: object) -> str:
    args: dict[str, object] = {"status": "online", "table": {"state": state}, "rnd": {}, "shoe": {}, "jam": {},
                               "lid": {}, "enabled": set(), "demo": True, "seat": 1, "chip": "10.00",
                               "keys": {"place_bet": "b", "next_round": "g", "hit": "h", "stand": "s"}}  # fmt: skip
    args.update(kw)
    return next_hint(**args)  # type: ignore[arg-type]


def test_the_next_useful_key_is_hinted() -> None:
    assert _hint("betting", enabled={"place_bet"}).startswith("b: bet 10.00 on Seat 1")
    assert _hint("betting", enabled={"place_bet", "no_more_bets"}).startswith("n: no more bets")
    assert (
        _hint("dealing") == "c: next card"
        and _hint("dealing", demo=False) == "deal the next card from the shoe"
    )
    assert _hint("players", enabled={"hit", "stand"}) == "h: hit  ·  s: stand"
    assert _hint("settled").startswith("l: cards in")
    assert _hint("cards_returned", enabled={"next_round"}) == "g: next round"
    # PT-2001 r.51: after the shoe reports the jam cleared, the supervisor releases the table
    assert "F4" in _hint("jammed", jam={"jammed": False})
    assert _hint("jammed", jam={"jammed": True, "device_cleared": True}).startswith(
        "jam cleared on the device: F4"
    )
    assert "F4" in _hint("jammed", jam={"jammed": True, "location": "output"}, lid={"state": "locked"})
    assert "F12" in _hint("link_down", shoe={"linked": True}) and "F2" in _hint("closed")
    assert "not online" in _hint("betting", status="offline")


def test_the_next_line_says_a_seat_with_a_bet_and_no_player_is_not_rated() -> None:
    """Issue 41: a round counts for a player only with his bet and himself at the seat; a bet at a seat nobody
    is seated at is named with the swipe (or the player-in key), never as a key the walker of the line takes."""
    keys = {"place_bet": "b", "player_in": "a"}
    bet = {"enabled": {"place_bet", "no_more_bets"}, "keys": keys, "seat": 3, "bet": 500}
    unrated = _hint("betting", seated=False, **bet)
    assert unrated.startswith("n: no more bets") and unrated.endswith(
        "a player at Seat 3 is rated once seated: swipe his card (or a)"
    )
    assert "rated" not in _hint("betting", seated=True, **bet)  # he sits there
    assert "rated" not in _hint("betting", seated=False, **(bet | {"bet": 0}))  # no bet yet
    assert "rated" not in _hint("betting", **bet)  # not known
    assert "rated" not in _hint("players", seated=False, enabled={"hit"}, keys=keys | {"hit": "h"}, bet=500)
    assert _hint("betting", table={}) == "waiting for the table's first report"


def test_money_of_a_non_number_is_unknown() -> None:
    assert money("[/]") == "unknown" and money(True) == "unknown" and money(None) == "—"


def test_numbers_from_outside_never_raise() -> None:
    from controller.terminal.view import alert_age, number

    for bad in ("[/]", None, True, float("nan"), float("inf"), 10**400, [1], {"a": 1}):
        assert number(bad) == 0.0
        alert_sort_key({"level": bad, "raised_at": bad, "severity": bad})
        assert alert_age(bad) in ("unknown", "0s")
        hand_text({"cards": ["AS"], "total": bad})
        DealerResults().add({"round_id": bad, "dealer_total": bad})
        settlement_lines({"round_id": bad, "dealer_total": bad, "hands": [bad, {"seat": bad, "net": bad}]})
