"""Play precision judged against the game actually dealt (issue 39; floor/reports/play_rounds.py): basic strategy for
the profile's shoe, the hand's own suits where the profile pays on them, costs given what the player could know;
judged players written apart from the judge (bench/tablebench/published_chart.py, a printed chart copied out);
the count kept out of every reason and alert of a view that withholds it; numbers kept numbers in the CSV."""

from __future__ import annotations

import csv
import io
from contextlib import contextmanager
from typing import Any

import pytest

from controller.rules.cards import Card
from controller.rules.engine import RoundEngine
from controller.rules.profiles import load_profile
from controller.rules.shoe_math import finite_chart, finite_house_edge
from controller.rules.strategy import Move
from controller.rules.types import Action, RoundPhase, SeatBet
from floor.protection import advantage
from floor.protection.advantage import DEFAULT_THRESHOLDS, FlagKind, assess, raise_alerts
from floor.protection.sessions_report import to_csv
from floor.reports.play_rounds import DecisionCheck, SeatRound, seat_rounds
from floor.reports.sessions_play import Level, PlaySession, TableRound, group_sessions
from floor.web.surveillance_view import _row
from tablebench.ap_players import simulate
from tablebench.published_chart import HARD, PAIRS, SOFT, UP_CARDS

H, S = Action.HIT, Action.STAND


def judged(profile: str, cards: list[str], actions: list[Action]) -> list[DecisionCheck]:
    """One seat's round dealt in the given order (the seat's first card, the up card, its second card, the hole
    card, then every card drawn) with the given decisions, judged from its description as the floor judges it."""
    engine = RoundEngine(load_profile(profile), [SeatBet(1, 500)], burn_before_deal=0)
    deck, todo = [Card.parse(c) for c in cards], list(actions)
    while not engine.is_complete():
        t = engine.turn()
        if engine.phase is RoundPhase.INSURANCE and t is not None:
            engine.act(Action.NO_INSURANCE, seat=t.seat)
        elif t is not None and t.kind == "player":
            engine.act(todo.pop(0), seat=t.seat, hand=t.hand)
        else:
            engine.on_card(deck.pop(0))
    [seat], problems = seat_rounds(engine.description(), round_id="r1", shoe=1, count=None)
    assert problems == []
    return list(seat.checks)


def test_a_suited_six_seven_against_a_three_is_hit_for_the_prize_and_an_unsuited_one_is_not():
    """PT-2001 r.35: 6-7-8 of one suit among the first three cards pays 3 x the bet whatever the hand's result.
    6H 7H against a 3 draws to the six 8H of the six decks: hitting is right (standing would be the chart's 13);
    6H 7S can win no prize: hitting is then a mistake, costed without the prize's average."""
    [suited] = judged("pt-2001", ["6H", "3D", "7H", "TS", "9C", "KD"], [H])
    assert (suited.taken, suited.best, suited.cost) == (Move.HIT, Move.HIT, 0.0)
    [plain] = judged("pt-2001", ["6H", "3D", "7S", "TS", "9C", "KD"], [H])
    assert (plain.taken, plain.best) == (Move.HIT, Move.STAND) and plain.cost > 0.03
    [stood] = judged("pt-2001", ["6H", "3D", "7H", "TS", "KD"], [S])
    assert stood.best == Move.HIT and stood.cost > 0.01  # standing on the suited pair gives the prize up


def test_a_later_decision_is_costed_given_what_the_player_could_know():
    """PT-2001 r.17, r.33-34: the hole card is looked at only at the end, so after a hit the dealer's ace may
    still hide a blackjack that takes the stake whatever the player does: the cost of standing on 10-2-2 against
    an ace is the cost where it matters times the chance it matters, 1 - P(blackjack) = 1 - 95/308. RO's dealer
    has checked (dealer_peek): no blackjack is possible and the same mistake costs it all."""
    *_, pt = judged("pt-2001", ["TH", "AD", "2S", "9C", "2C"], [H, S])
    *_, ro = judged("ro-online", ["TH", "AD", "2S", "9C", "2C"], [H, S])
    assert pt.best == ro.best == Move.HIT and pt.taken == Move.STAND
    assert pt.cost / ro.cost == pytest.approx(1 - 95 / 308, abs=0.01)


def test_a_multi_card_sixteen_against_a_ten_follows_the_shoes_basic_strategy_at_no_cost():
    """Six decks: basic strategy hits every sixteen against a ten (its total decides); 4-4-8 standing is better
    for those exact cards (the small cards are out): a deviation from the chart, but no cost."""
    checks = judged("pt-2001", ["4C", "TD", "4H", "7D", "8S", "2C"], [H, H, S])
    assert [(c.taken, c.best, c.cost) for c in checks] == [(Move.HIT, Move.HIT, 0.0)] * 2 + [
        (Move.STAND, Move.STAND, 0.0)
    ]
    *_, stand = judged("pt-2001", ["4C", "TD", "4H", "7D", "8S"], [H, S])
    assert (stand.taken, stand.best, stand.cost) == (Move.STAND, Move.HIT, 0.0)


def _prize_hand(c: DecisionCheck) -> bool:
    a, b = (Card.parse(x) for x in c.hand[:2])
    pair = sorted((a.value, b.value))
    return pair == [7, 7] or (pair in ([6, 7], [6, 8], [7, 8]) and a.suit == b.suit)


def test_players_from_a_printed_chart_are_judged_correct_but_where_the_prizes_pay():
    """The printed chart (written apart from the judge) is PT-2001's basic strategy except where r.35's prizes
    change the decision, which no printed chart knows: every decision of its players elsewhere matches, at no
    cost; theo is the initial bets times the six-deck edge."""
    checks: list[DecisionCheck] = []
    edge = finite_house_edge(load_profile("pt-2001")).basic_strategy
    for kind in ("flat", "random"):
        trs = []
        for i, r in enumerate(simulate(kind, shoes=3, seed=2)):
            seats, problems = seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)
            assert problems == []
            trs.append(TableRound(i, r.round_id, r.shoe, False, seats, r.count))
            checks += [c for s in seats for c in s.checks]
        for s in group_sessions("S1", "T1", trs):
            assert s.theoretical_win == round(s.initial_bets * edge)
    assert len(checks) > 400
    off = [c for c in checks if not c.matches]
    assert all(_prize_hand(c) for c in off), off
    assert all(c.cost == 0 for c in checks if not _prize_hand(c))
    assert 1 - len(off) / len(checks) >= 0.99


def test_the_printed_chart_agrees_with_the_computed_six_deck_strategy_but_for_the_prizes():
    """Cell by cell, the printed chart against shoe_math's basic strategy for pt-2001's six decks: the only
    differences are the pair of 7s against a 2 and a 10, where r.35's three 7s make the hit worth more."""
    computed = finite_chart(load_profile("pt-2001"))
    cell = {"H": "H", "S": "S", "D": "D", "P": "P", "R": "R"}
    differ = []
    for name, row in computed.items():
        kind, what = name.split()
        if kind == "pair":
            printed = PAIRS[1 if what == "As" else int(what[:-1])]
        elif kind == "soft":
            printed = SOFT[min(max(int(what), 17), 19)]
        else:
            printed = HARD[min(max(int(what), 8), 17)]
        for up, code in zip(UP_CARDS, printed.split(), strict=True):
            if cell[code] != row[up].value:
                differ.append((name, up))
    assert differ == [("pair 7s", 2), ("pair 7s", 10)]


def _session(checks: int = 0) -> PlaySession:
    """A player's row of 20 flat rounds at true counts 2-3 against 20 rounds of its shoes sat out at -1..0."""
    rounds = [SeatRound(f"r{i}", 1, 5, "p1", 500, 500, 0, 0.005, 2.0 + i / 20) for i in range(20)]
    return PlaySession(Level.PLAYER, "S1", "", None, "p1", [1] * 20, [r.round_id for r in rounds], rounds,
                       skipped=[-1.0 + i / 20 for i in range(20)])  # fmt: skip


def test_a_view_that_withholds_the_count_gets_reasons_and_alerts_without_it():
    s = _session()
    [flag] = assess(s, DEFAULT_THRESHOLDS)
    assert flag.kind == FlagKind.HIGH_COUNT_ENTRY
    assert "mean true count" in _row(s, show_count=True)["reasons"][0]  # surveillance, once shown, keeps it
    hidden = _row(s, show_count=False)
    assert hidden["count"] == {"state": "withheld"}
    assert not any(x in hidden["reasons"][0] for x in ("mean true count", "2.", "above"))
    raised: list[tuple[Any, ...]] = []

    class Conn:
        @contextmanager
        def transaction(self):
            yield

        def cursor(self) -> None:
            return None

    original = advantage.raise_alert
    try:
        advantage.raise_alert = lambda *a: raised.append(a) or True  # type: ignore[assignment]
        assert raise_alerts(Conn(), [s]) == 1  # type: ignore[arg-type]
    finally:
        advantage.raise_alert = original
    [(_cur, _table, _kind, _level, message, details, _key)] = raised
    assert "plays at high counts" in message
    assert not any(x in message + " ".join(details["reasons"]) for x in ("mean true count", "2.", "above"))


def test_a_negative_correlation_stays_a_number_in_the_sessions_csv_and_text_is_still_guarded():
    rounds = [SeatRound(f"r{i}", 1, 5, None, 500 * (20 - i), 500, 0, 0.005, i / 4) for i in range(20)]
    s = PlaySession(Level.SEAT, "S1", "T1", 5, "-2+3*cmd|' /C calc'!A0", [1] * 20, [r.round_id for r in rounds],
                    rounds)  # fmt: skip
    [row] = list(csv.DictReader(io.StringIO(to_csv([s], DEFAULT_THRESHOLDS, {}))))
    assert float(row["bet_count_rho"]) == pytest.approx(-1.0)  # bets fell as the count rose
    assert row["bet_count_rho"].startswith("-") and row["player"].startswith("'-2+3")
