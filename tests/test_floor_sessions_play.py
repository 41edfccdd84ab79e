"""Play sessions on the floor (issue 32): simulated players' rounds dealt on the real table core, archived into a
real PostgreSQL, and the session figures rebuilt from the archive: every figure is recomputed here from what the
players did (the simulator's own engine), the count from the cards dealt before each bet."""

from __future__ import annotations

import csv
import io

import psycopg
import pytest

from controller.cli import main as tablectl
from controller.rules.strategy import Move
from floor.common.alerts import acknowledge_alert
from floor.protection.advantage import DEFAULT_THRESHOLDS
from floor.protection.sessions_report import to_csv, to_html
from floor.reports.play_rounds import ShoeCount, profile_edge, seat_rounds
from floor.reports.play_stats import entry_count, spearman, true_count
from floor.reports.queries import floor_alerts
from floor.reports.rounds import ArchivedRound
from floor.reports.sessions_play import (
    Level,
    ShoeState,
    TableRound,
    group_sessions,
    load_sessions,
    player_totals,
    table_rounds,
)
from floor.web.dashboard import snapshot
from tablebench.ap_players import SUBJECT_SEAT, simulate
from tablebench.table_testing import Harness
from tests.support.ap_table import deal_on_table
from tests.support.floor import migrated_database
from tests.test_floor_queries import WHEN, archive_harness, play_two_rounds

SINCE, UNTIL = WHEN.replace(hour=0), WHEN.replace(hour=23)


@pytest.fixture
def dsn():
    with migrated_database() as d:
        yield d


def test_hi_lo_true_count_and_spearman_against_hand_figures():
    c = ShoeCount(6)
    c.feed([{"card": "2S"}, {"card": "5H"}, {"card": "KD"}, {"card": "6C"}, {"card": "9C", "to": "burn"}])
    assert (c.running, c.out) == (2, 5)  # 2, 5, 6: +1 each; K: -1; the burn is out but never seen
    assert c.true() == pytest.approx(2 / (6 - 5 / 52))
    assert true_count(3, 52 * 6, 6) == 12  # never divided by less than a quarter deck
    t = spearman([float(x) for x in range(20)], [float(x * x) for x in range(20)])
    assert t.rho == pytest.approx(1.0) and t.p_value < 1e-4
    flat = spearman([float(x) for x in range(20)], [500.0] * 20)
    assert flat.rho is None and flat.p_value is None  # a flat bettor: nothing to claim
    anti = spearman([float(x) for x in range(20)], [float(-x) for x in range(20)])
    assert anti.p_value > 0.99  # one-sided: betting less at high counts is no counting
    back = entry_count([2.0, 3.0] * 10, [-1.0, 0.0, 1.0] * 10)  # played only at high counts
    assert back.difference == pytest.approx(2.5) and back.p_value < 1e-6
    assert entry_count([0.5] * 30, []).p_value is None  # a seated player skips nothing: nothing claimed


def test_play_precision_judges_each_decision_against_basic_strategy_with_what_the_rules_still_open():
    """PT-2001 r.36: surrender only before any additional card; once another hand drew it is no option, so
    standing on 16 against a ten is then the right play, not a mistake."""
    flat = [s for r in simulate("flat", shoes=3, seed=2) for s in seat_rounds(
        r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)[0] if s.seat == SUBJECT_SEAT]  # fmt: skip
    checks = [c for s in flat for c in s.checks]
    assert len(checks) > 50 and all(c.matches and c.cost == 0 for c in checks)
    poor = [s for r in simulate("poor", shoes=3, seed=2) for s in seat_rounds(
        r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)[0] if s.seat == SUBJECT_SEAT]  # fmt: skip
    wrong = [c for s in poor for c in s.checks if not c.matches]
    assert wrong and all(c.cost >= 0 for c in wrong) and any(c.cost > 0.1 for c in wrong)
    assert any(c.taken == Move.DOUBLE or c.best == Move.DOUBLE for c in wrong)


def test_sessions_break_on_a_gap_and_on_a_shoe_change():
    [r] = simulate("flat", shoes=1, seed=1)[:1]
    seats, _ = seat_rounds(r.description, round_id="x", shoe=1, count=0.0)
    five = [s for s in seats if s.seat == SUBJECT_SEAT]
    rounds = [TableRound(i, f"r{i}", 1 if i < 20 else 2, False, five) for i in (0, 1, 2, 9, 10, 20, 21)]
    got = [len(s.rounds) for s in group_sessions("S1", "T1", rounds, gap=5) if s.level == Level.SEAT]
    assert got == [3, 2, 2]  # 2 -> 9 sat out 6 rounds (> 5); 10 -> 20 is a new shoe


def test_a_player_identity_is_followed_across_seats_and_summed_over_the_window():
    rounds = simulate("backcounter", shoes=6, seed=6, player="card-4711")
    trs = []
    for i, r in enumerate(rounds):
        seats, _ = seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)
        trs.append(TableRound(i, r.round_id, r.shoe, False, seats, r.count))
    sessions = group_sessions("S1", "T1", trs, gap=5)
    mine = [s for s in sessions if s.level == Level.PLAYER_SESSION]
    [total] = player_totals(sessions)
    assert len(mine) >= 2 and all(s.player == "card-4711" for s in mine)
    assert total.rounds == [r for s in mine for r in s.rounds] and total.handle == sum(s.handle for s in mine)
    assert min(r.true_count for r in total.rounds) >= 1  # the back-counter sits down only at high counts
    entry = total.entry()
    assert entry.mean >= 1.5 and entry.difference >= 1.5 and entry.p_value < 1e-3
    assert entry.n + entry.skipped == sum(1 for r in rounds if r.shoe in set(total.shoes))


def test_a_counters_session_rebuilt_from_the_archive_of_a_real_table_core(dsn):
    rounds = simulate(
        "counter", shoes=1, seed=4, player=None
    )  # the live table names no player (no rating system)
    h = Harness()
    deal_on_table(h, rounds)
    archive_harness(dsn, h)
    with psycopg.connect(dsn) as conn:
        report = load_sessions(conn, SINCE, UNTIL)
    assert report.problems == []
    [seat] = [s for s in report.sessions if s.level == Level.SEAT and s.seat == SUBJECT_SEAT]
    sim = [s for r in rounds for s in seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe,
                                                  count=r.count)[0] if s.seat == SUBJECT_SEAT]  # fmt: skip
    assert len(seat.rounds) == len(sim) == len(rounds) and report.players == []
    assert seat.initial_bets == sum(s.bet for s in sim) and seat.handle == sum(s.staked for s in sim)
    assert seat.largest == max(s.bet for s in sim) and seat.smallest == min(s.bet for s in sim)
    assert seat.win == -sum(s.net for s in sim)
    assert seat.theoretical_win == round(sum(s.bet for s in sim) * sim[0].edge) and seat.theoretical_win > 0
    assert seat.precision == 1.0 and seat.cost == 0
    # the count at each bet: the floor's, from the archived cards, is the one the counter bet on
    assert [r.true_count for r in seat.rounds] == pytest.approx([r.count for r in rounds])
    trend = seat.trend()
    assert trend is not None and trend.rho > 0.3 and trend.p_value < 0.01
    [regular] = [s for s in report.sessions if s.level == Level.SEAT and s.seat == 1]
    assert regular.trend().rho is None  # the flat regular: no trend to claim


def test_a_continuous_shuffler_has_no_count_measure(dsn):
    h = Harness()
    play_two_rounds(h)  # a continuous shuffler (PT-2001 r.56-62)
    archive_harness(dsn, h)
    with psycopg.connect(dsn) as conn:
        report = load_sessions(conn, SINCE, UNTIL)
    assert report.problems == []
    [seat] = [s for s in report.sessions if s.level == Level.SEAT and s.seat == 1]
    assert seat.continuous and seat.trend() is None and seat.entry() is None
    assert [r.true_count for r in seat.rounds] == [None, None] and seat.initial_bets == 3000


def test_floor_sessions_csv_and_page_and_the_shifts_theoretical_win(dsn, tmp_path, capsys):
    rounds = simulate("counter", shoes=1, seed=4, player=None)
    h = Harness()
    deal_on_table(h, rounds)
    archive_harness(dsn, h)
    window = ["--since", SINCE.isoformat(), "--until", UNTIL.isoformat()]
    assert tablectl(["floor", "sessions", "--dsn", dsn, *window]) == 0
    rows = {
        r["seat"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out)) if r["level"] == "seat"
    }
    sim = [s for r in rounds for s in seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe,
                                                  count=r.count)[0]]  # fmt: skip
    five, one = rows[str(SUBJECT_SEAT)], rows["1"]
    assert int(five["rounds"]) == len(rounds) and int(five["initial_bets_minor"]) == sum(
        s.bet for s in sim if s.seat == 5
    )
    assert five["count_measure"] == "applicable" and float(five["bet_count_rho"]) > 0.5
    assert five["flags"] == "bet_count_trend" and int(five["counted_rounds"]) == len(rounds)
    assert one["flags"] == "" and float(five["bet_count_p"]) > 1e-6  # so a stricter --max-p flags nothing
    assert one["bet_count_rho"] == "" and one["precision_pct"] == "100.0"
    page = tmp_path / "sessions.html"
    assert tablectl(["floor", "sessions", "--dsn", dsn, *window, "--html", str(page)]) == 0
    text = page.read_text()
    assert "<script" not in text and "http" not in text.replace("http-equiv", "") and text.count("<svg") == 2
    assert "bets rise with the count" in text
    assert tablectl(["floor", "sessions", "--dsn", dsn, *window, "--html", str(page), "--max-p", "1e-6"]) == 0
    assert "bets rise with the count" not in page.read_text()
    # the shift's theoretical win: the original bets x pt-2001's house edge (strategy.py)
    assert tablectl(["floor", "shift", "--dsn", dsn, *window, "--csv"]) == 0
    [t1] = [r for r in csv.DictReader(io.StringIO(capsys.readouterr().out)) if r["level"] == "table"]
    assert int(t1["theoretical_win_minor"]) == round(sum(s.bet for s in sim) * profile_edge("pt-2001")) > 0
    assert int(t1["initial_bets_minor"]) == sum(s.bet for s in sim)  # the basis the edge multiplies


def test_the_sessions_page_shows_hostile_names_as_text():
    rounds = simulate("random", shoes=1, seed=1, player='<img src=x onerror=alert(1)>"')
    trs = [
        TableRound(
            i,
            r.round_id,
            r.shoe,
            False,
            seat_rounds(r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)[0],
        )
        for i, r in enumerate(rounds)
    ]
    sessions = group_sessions("S1", "T<1>", trs)
    text = to_html(sessions, DEFAULT_THRESHOLDS, {}, SINCE, UNTIL)
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;&quot;" in text and "T&lt;1&gt;" in text
    out = to_csv(sessions, DEFAULT_THRESHOLDS, {})
    assert "T<1>" in out


def test_an_advantage_play_alert_is_raised_once_and_kept_from_the_dashboards_list(dsn, capsys):
    rounds = simulate("counter", shoes=1, seed=4, player=None)
    h = Harness()
    deal_on_table(h, rounds)
    archive_harness(dsn, h)
    window = ["--since", SINCE.isoformat(), "--until", UNTIL.isoformat()]
    assert tablectl(["floor", "sessions", "--dsn", dsn, *window, "--alert"]) == 0
    assert capsys.readouterr().err.rstrip().endswith(", 1 new advantage play alert")
    assert tablectl(["floor", "sessions", "--dsn", dsn, *window, "--alert"]) == 0  # the same session again
    assert capsys.readouterr().err.rstrip().endswith(", 0 new advantage play alerts")
    with psycopg.connect(dsn) as conn:
        [alert] = floor_alerts(conn, surveillance=True)
        assert alert.kind == "advantage_play" and alert.details["seat"] == SUBJECT_SEAT
        assert alert.details["flags"] == ["bet_count_trend"] and "seat 5 at table T1" in alert.message
        assert floor_alerts(conn) == [] and snapshot(conn)["alerts"] == []  # what viewers and supervisors get
        assert not acknowledge_alert(
            conn, alert.alert_id, "carol"
        )  # a supervisor's acknowledgement misses it
        assert acknowledge_alert(conn, alert.alert_id, "sue", surveillance=True)


def test_a_void_rounds_cards_count_and_an_incomplete_round_ends_the_shoes_count():
    """A voided round returns the bets (PT-ONLINE-2015 r.27-28) but its cards left the shoe: they count. A round
    the archive lacks part of leaves the rest of the shoe without a count (never a guess)."""
    [sim] = simulate("flat", shoes=1, seed=1)[:1]
    desc = sim.description

    def archived(rid: str, event: int, **kw) -> ArchivedRound:
        base = dict(profile="pt-2001", bets=desc["bets"], cards=desc["cards"], decisions=desc["decisions"],
                    burn=desc.get("burn_before_deal"), settlement={}, first_event=event)  # fmt: skip
        return ArchivedRound("S1", "T1", rid, **{**base, **kw})

    void = archived("v", 2, void=True, cards=[{"card": "5S"}, {"card": "6H"}], settlement=None)
    shoe = [ShoeState(1, 1, False, 6, 0)]
    trs, problems = table_rounds([void, archived("a", 3)], shoe)
    assert problems == [] and [t.round_id for t in trs] == ["a"]
    assert trs[0].count == pytest.approx(2 / (6 - 2 / 52))  # 5 and 6: +2 before round a's bets
    gap = archived("g", 3, missing=["event 3 is not archived"])
    trs, problems = table_rounds([gap, archived("b", 4)], shoe)
    assert [t.round_id for t in trs] == ["b"] and trs[0].count is None and "incomplete" in problems[0]
