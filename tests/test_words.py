"""One vocabulary (issue 30, controller/words.py): every alert kind, state, phase, decision, outcome and jackpot
combination has a label; card faces as on the table; hands numbered from 1; one way to write money. Then every
screen and report a person reads is walked for identifiers from the code (tests/support/code_names.py): the
dispute report (text and HTML) of every example round, `demo --auto`'s lines, `jackpot-math`, the pit
terminal's panels, the floor's alert console (Textual's pilot on a real mosquitto), the dashboard's alert texts and
every `tablectl ... --help` (issue 42: grouped, with examples, in the operator's words)."""

from __future__ import annotations

import html
import json
import re
import uuid
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.broker import USERS
from support.code_names import CODE_NAMES, MONEY, code_names
from test_terminal import screen_text, until
from test_terminal_hostile import Publisher, broker  # noqa: F401 (fixture)

from controller.actions import DEALER_ACTIONS, SUPERVISOR_ACTIONS
from controller.alert_kinds import ALERT_KINDS
from controller.cli.jackpot_math import _text, report
from controller.jackpot.hits import Combination
from controller.jackpot.math import combination_odds
from controller.rules.rounds import InvalidRound, replay
from controller.rules.types import Action, RoundPhase
from controller.table.machine import STATES
from controller.terminal import dispute_report as dispute
from controller.terminal.alerts import AlertsApp
from controller.terminal.fleet import FleetAlerts
from controller.terminal.pit_panels import alerts_panel, hits_text, last_round_panel, round_panel, shoe_panel
from controller.terminal.pit_summary import alert_summary, settled_summary
from controller.terminal.view import DealerResults
from controller.words import (
    ACTION_WORDS,
    ALERT_WORDS,
    COMBINATION_WORDS,
    OUTCOME_WORDS,
    PHASE_WORDS,
    STATE_WORDS,
    STATUS_WORDS,
    card_face,
    hand_label,
    in_words,
    lid_words,
    money,
)
from tablebench.broker import Broker
from tablebench.demo_lines import bets_line, card_line, round_summary, settlement_line

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "docs" / "examples" / "rounds").glob("*.json"))
OUTCOMES = (
    "blackjack",
    "win",
    "push",
    "lose",
    "bust",
    "surrender",
    "even_money",
    "five_card",
)  # settlement.py


def test_every_name_the_code_uses_has_words() -> None:
    assert set(ALERT_KINDS) <= ALERT_WORDS.keys()
    assert set(STATES) <= STATE_WORDS.keys()
    assert {p.value for p in RoundPhase} <= PHASE_WORDS.keys()
    assert {*DEALER_ACTIONS, *SUPERVISOR_ACTIONS, *(a.value for a in Action)} <= ACTION_WORDS.keys()
    assert {c.name for c in Combination} <= COMBINATION_WORDS.keys()
    assert set(OUTCOMES) <= OUTCOME_WORDS.keys()
    labels = [*ALERT_WORDS.values(), *STATE_WORDS.values(), *ACTION_WORDS.values(), *COMBINATION_WORDS.values(),
              *OUTCOME_WORDS.values(), *STATUS_WORDS.values(), *PHASE_WORDS.values()]  # fmt: skip
    assert not [label for label in labels if code_names(label)]


def test_cards_hands_lid_and_money_as_people_write_them() -> None:
    assert [card_face(c) for c in ("KS", "TH", "2D", "AC", "??")] == ["K♠", "10♥", "2♦", "A♣", "(face down)"]
    assert hand_label(3, 0) == "Seat 3" and hand_label(3, 1) == "Seat 3, hand 2"
    assert hand_label(3, 0, True) == "Seat 3, hand 1"
    assert lid_words("open", "supervisor:alice") == "open (unlocked by supervisor alice)"
    assert (
        lid_words("open", "auto") == "open (opened for the round's cards)"
        and lid_words("locked", "x") == "locked"
    )
    assert money(1_000_070, "EUR") == "10,000.70 EUR" and money(-1000) == "-10.00"
    assert money(2000, "EUR", sign=True) == "+20.00 EUR" and money(0, sign=True) == "0.00"
    assert (
        in_words("4H given to seat 1 hand 0 after no_insurance")
        == "4♥ given to Seat 1, hand 1 after no insurance"
    )
    assert in_words("1 card(s) still out; 3 outbox row(s) wait") == "1 card still out; 3 outbox rows wait"


def _report_texts(path: Path) -> Iterator[str]:
    """The text report and the HTML page's text, without what the round file wrote itself (its comment)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    try:
        result, error = replay(doc), None
    except InvalidRound as exc:
        result, error = None, exc
    rep = dispute.build(doc, result, error, journal={"round_id": "R1", "currency": "EUR"})
    rep.sections = [s for s in rep.sections if s.title != "Note written in the file"]
    yield dispute.text(rep)
    page = dispute.html_page([rep])
    yield html.unescape(re.sub(r"<[^>]+>", " ", page.split("</style>", 1)[1]))
    for sec in rep.sections:
        for col in ("paid", "net", "stake", "amount"):
            if col in sec.columns:
                i = sec.columns.index(col)
                for row in sec.rows:
                    if i < len(row) and row[i] and row[i] != "0":
                        assert MONEY.fullmatch(row[i].split(" (")[0]), (path.name, sec.title, col, row[i])


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_dispute_report_has_no_code_names_and_writes_money(path: Path) -> None:
    """`tablectl replay --report` / `--html` of every example round: cards as faces, hands from 1, decisions and
    outcomes in words, every amount in major units (`+20.00`), the currency in the title."""
    for shown in _report_texts(path):
        assert not code_names(shown), (path.name, code_names(shown))
        assert "amounts in EUR" in shown


SETTLEMENT = {
    "round_id": "R7",
    "dealer_cards": ["TH", "AS"],
    "dealer_total": 21,
    "dealer_blackjack": True,
    "hands": [
        {"seat": 1, "hand": 0, "cards": ["AD", "KC"], "total": 21, "stake": 1000, "outcome": o, "net": n}
        for o, n in zip(OUTCOMES, (1500, 1000, 0, -1000, -1000, -500, 1000, 500), strict=True)
    ]
    + [
        {
            "seat": 2,
            "hand": 1,
            "cards": ["8S", "8D"],
            "total": 16,
            "stake": 2000,
            "outcome": "lose",
            "net": -2000,
        }
    ],
    "insurance": [{"seat": 1, "net": 1000}],
    "seat_nets": {"1": 2500, "2": -2000},  # as the engine settles it: seat 1's hands and insurance
}


def test_demo_auto_lines_have_no_code_names_and_write_money() -> None:
    """What `tablectl demo --auto` prints (tests/test_demo.py runs it whole): cards as faces, recipients in words,
    outcomes in words, money with the currency."""
    lines = [
        card_line({"shoe_seq": 2, "recipient": "seat:1:0", "code": "QH"}),
        card_line({"shoe_seq": 3, "recipient": "seat:4:1", "code": "TS"}),
        card_line({"shoe_seq": 1, "recipient": "burn", "code": "JD"}),
        card_line({"shoe_seq": 4, "recipient": "dealer", "hidden": True}),
        settlement_line(SETTLEMENT, "EUR"),
        round_summary(SETTLEMENT, "EUR"),
        bets_line({"round_id": "R7", "bets": [{"seat": 1, "amount": 1000}]}, "EUR"),
    ]
    assert lines[:4] == ["card 2 to Seat 1: Q♥", "card 3 to Seat 4, hand 2: 10♠", "card 1 burnt: J♦",
                         "card 4 to Dealer: face down (hole card)"]  # fmt: skip
    for line in lines:
        assert not code_names(line), (line, code_names(line))
    assert (
        "net +15.00 EUR" in lines[4] and "bet 10.00 EUR: A♦ K♣ = 21, blackjack, wins, +15.00 EUR" in lines[5]
    )
    assert lines[6].endswith("bets Seat 1 10.00 EUR")


def test_jackpot_math_in_words() -> None:
    args = Namespace(bet_value=100, seed=1_000_000, meter=2_500_000, increment_bp=5000, reserve_bp=0)
    out = _text(report(combination_odds(6), args), "EUR")
    assert not code_names(out), code_names(out)
    assert "two aces of different suits" in out and "return at meter 25,000.00 EUR" in out
    assert "jackpot bet: 1.00 EUR" in out and "minor units" not in out


def _render(renderable: Any) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_pit_terminal_panels_in_words() -> None:
    """Every status, outcome, alert kind, lid reason and combination through the pit terminal's panels."""
    hands = [{"hand": 0, "cards": ["AS", "KD"], "total": 21, "blackjack": True, "stake": 1000, "status": s}
             for s in STATUS_WORDS]  # fmt: skip
    rnd = {"round_id": "R7", "phase": "insurance", "dealer": {"cards": ["AH", "??"], "total": 11},
           "seats": [{"seat": 1, "bet": 1000, "insurance": 500, "hands": hands}],
           "turn": {"kind": "insurance", "seat": 1}}  # fmt: skip
    keys = {"insurance": "i", "decline_insurance": "o", "even_money": "e"}
    alerts = [{"alert_id": i, "kind": k, "severity": "critical", "level": 0, "reason": ALERT_KINDS[k]}
              for i, k in enumerate(ALERT_KINDS)]  # fmt: skip
    hits = [
        {"hit_id": 1, "seat": 1, "combination": c.name, "amount": 2500, "verified": False}
        for c in Combination
    ]
    results = DealerResults()
    results.add(SETTLEMENT)
    shown = [
        _render(round_panel({}, rnd, {"R7": ["2C"]}, enabled=set(keys), keys=keys, currency="EUR")),
        _render(last_round_panel(SETTLEMENT, "EUR")),
        _render(settled_summary(SETTLEMENT, "EUR")),
        _render(alert_summary(alerts)),
        _render(alerts_panel(alerts)),
        hits_text(hits, "EUR"),
        _render(
            shoe_panel(
                shoe={"linked": True},
                lid={"state": "open", "unlocked_by": "supervisor:alice"},
                jam={"jammed": False},
                table={"state": "betting"},
                jackpot={"meter": 1000070, "currency": "EUR"},
                have_jackpot=True,
                hits=hits,
                results=results,
            )
        ),
    ]
    text = "\n".join(shown)
    assert not code_names(text), code_names(text)
    assert "A♥ (face down)" in text and "allowed: i Insurance · o No insurance · e Even money" in text
    assert "lid: open (unlocked by supervisor alice)" in text and "Jackpot meter: 10,000.70 EUR" in text
    assert (
        "Seat 1 +25.00 · Seat 2 -20.00" in text
        and "net in EUR" in text
        and "Dealer's last results: blackjack" in text
    )
    assert "four aces of one colour 25.00 EUR" in text


# a reason as the controller writes it (controller/table/cards.py): card codes, a hand from 0, a decision's name
REASON = "PT-2001 r.58: KS given to seat 2 hand 0 after no_insurance: KS goes to the discard"


async def test_alert_console_in_words(broker: Broker) -> None:  # noqa: F811 (the fixture, imported)
    """The floor's alert console with an open alert of every kind and an acknowledged one: kinds and severities
    in words, no code name on the screen (banner, list, history)."""
    pub = Publisher(broker, f"casino/s{uuid.uuid4().hex[:6]}/table/T1")
    kinds = list(ALERT_KINDS)
    alerts = [{"alert_id": i + 1, "kind": k, "severity": ("critical", "warning", "info")[i % 3], "level": 0,
               "raised_at": 1_700_000_000.0 + i, "reason": REASON} for i, k in enumerate(kinds)]  # fmt: skip
    alerts[1]["reason"] = "shoe error: " + "the reader reports a fault " * 10 + "zzq"  # wider than the screen
    pub.retain("alerts/open", {"alerts": alerts})
    pub.retain("alerts/events", {"action": "acknowledged", "alert": {**alerts[0], "alert_id": 99,
               "kind": "dealer_error", "acked_by": "bob"}})  # fmt: skip
    try:
        fleet = FleetAlerts(broker.host, broker.port, username="supervisor1", password=USERS["supervisor1"])
        console = AlertsApp(fleet)
        async with console.run_test(size=(160, 50)) as pilot:
            await until(pilot, lambda: len(fleet.open_alerts()) == len(kinds) and fleet.history)
            console._dirty = True
            await pilot.pause(0.3)
            text = screen_text(console)
            assert not code_names(text), code_names(text)
            assert "NEW ALERT" in text or "ALERT" in text
            assert "Shoe jam" in text and "Dealer error" in text and "critical" in text
            assert "K♠ given to Seat 2, hand 1 after no insurance" in text
            assert (
                "1 table  ·  " in text and f"{len(kinds)} open alerts" in text
            )  # counts in words (issue 42)
            assert "(s)" not in text
            assert "zzq" not in text and re.search(r"the reader reports a fault[^\n]*…", text)  # cut: says so
            assert not [k for k in CODE_NAMES if "_" in k and k in text]
    finally:
        pub.close()


def test_floor_day_report_page_in_words() -> None:
    """`tablectl floor report --html`: headers in words (`win (house)`, not `win_minor`), money in major
    units with the currency; the CSV keeps its code-named columns with their unit (`win_minor`)."""
    from datetime import UTC, date, datetime

    from floor.reports.day import COLUMNS, TableDay, to_csv
    from floor.reports.day_html import _HEAD, to_html

    assert set(_HEAD) == set(COLUMNS)
    day = date(2026, 11, 26)
    row = TableDay("S1", "T1", rounds=3, handle=3000, paid=1500, win=1500, dealer_errors=1,
                   jackpot_meter=1_000_070, currency="EUR",
                   meter=[(datetime(2026, 11, 26, 10, tzinfo=UTC), 1_000_000)])  # fmt: skip
    page = to_html([row], day, datetime(2026, 11, 27, tzinfo=UTC))
    shown = html.unescape(re.sub(r"<[^>]+>", " ", page.split("</style>", 1)[1]))
    assert not code_names(shown), code_names(shown)
    assert "win (house)" in shown and "+15.00 EUR" in shown and "10,000.70 EUR" in shown
    assert to_csv([row]).splitlines()[0].split(",")[6] == "win_minor"


# ---- the floor's figures (issue 36): one name, one sign, the table's configured currency, everywhere ----
FIGURES_DAY = "2026-11-23"


@pytest.fixture(scope="module")
def house_won_ten() -> Iterator[tuple[str, int]]:
    """One round the house wins 10.00 (seat 1 stands on 17, the dealer has 19), on a table without a jackpot
    whose configuration says CHF (pinned at open_table as the service pins `table.currency`), closed after it;
    archived as the archive stores it. Yields the database and the win the table's own settlement implies."""
    from drivers import events as ev
    from tablebench.table_testing import Harness
    from tests.support.floor import migrated_database
    from tests.test_floor_queries import WHEN, archive_harness
    from tests.test_floor_shift import journaled_settlements

    h = Harness()
    h.open_continuous(pinned={"profile": "pt-2001", "currency": "CHF"})
    h.start_round({1: 1000})
    for c in ["2C", "TS", "9D", "7S", "KH"]:  # burn; seat 1 T, dealer 9, seat 1 7 (17), hole K (19)
        h.card(c)
    h.dealer("stand")
    h.lid_cycle()
    h.sup("close_table")
    h.dev(ev.DeckCheckResult({r + s: 6 for r in ev.RANKS for s in ev.SUITS}))
    assert h.core.state == "closed"
    [settled] = journaled_settlements(h)
    with migrated_database() as dsn:
        archive_harness(dsn, h, table="T1", when=WHEN)
        yield dsn, -settled["total_net"]


def _floor_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    from controller.cli import main as tablectl

    assert tablectl(["floor", *args]) == 0
    return capsys.readouterr().out


def _shown(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.split("</style>", 1)[1]))


def test_floor_figures_one_round_the_house_wins_in_every_report(house_won_ten, tmp_path, capsys) -> None:
    """Issue 36: the house won 10.00 of a 10.00 handle: win +10.00 (never the players' -10.00), handle 10.00,
    hold +100%, in CHF, in `floor report`, `floor shift` (terminal, CSV, page) and `floor sessions` (CSV,
    page), every one named as floor/reports/figures.py names it."""
    import csv
    import io

    from floor.reports.figures import HANDLE, HOLD, WIN

    dsn, win = house_won_ten
    assert win == 1000  # the table settled the player's -10.00
    window = ["--dsn", dsn, "--since", f"{FIGURES_DAY}T11:00", "--until", f"{FIGURES_DAY}T19:00"]
    day = list(csv.DictReader(io.StringIO(_floor_cli(capsys, "report", "--dsn", dsn, "--day", FIGURES_DAY))))
    shift = list(csv.DictReader(io.StringIO(_floor_cli(capsys, "shift", *window, "--csv"))))
    sessions = list(csv.DictReader(io.StringIO(_floor_cli(capsys, "sessions", *window, "--csv"))))
    for row in (day[0], *[r for r in shift if r["level"] in ("table", "pit", "floor")], sessions[0]):
        assert (int(row[WIN.column]), int(row[HANDLE.column]), row["currency"]) == (win, 1000, "CHF"), row
    assert {r[HOLD.column] for r in shift if r["level"] != "dealer"} == {"100.00"}

    text = _floor_cli(capsys, "shift", *window)  # a terminal: a table in money, headed in words
    assert WIN.label in text and HOLD.label in text and "win_minor" not in text
    [t1] = [line for line in text.splitlines() if line.startswith("T1 ")]
    assert "+10.00 CHF" in t1 and "10.00 CHF" in t1 and "+100.00%" in t1 and "-10.00" not in t1
    pages = {"report": ["report", "--dsn", dsn, "--day", FIGURES_DAY], "shift": ["shift", *window],
             "sessions": ["sessions", *window]}  # fmt: skip
    for name, args in pages.items():
        path = tmp_path / f"{name}.html"
        _floor_cli(capsys, *args, "--html", str(path))
        shown = _shown(path.read_text())
        assert WIN.label in shown and "+10.00 CHF" in shown and "-10.00" not in shown, name
        assert HANDLE.label in shown and "10.00 CHF" in shown, name


def test_floor_figures_on_the_dashboard_as_in_the_reports(house_won_ten) -> None:
    """The dashboard's shift page (its API, its CSV) and the table's page: the same round, win +10.00 CHF
    under the same label; the table page's win is the house's (the players' result stays labelled theirs)."""
    from floor.reports.figures import HANDLE, WIN
    from floor.web.table_view import SEAT_RESULTS
    from tests.support.floor_web import api_login, dashboard, request, session_token

    dsn, _win = house_won_ten
    with dashboard(dsn) as web:
        token = session_token(api_login(web.port, "carol"))
        query = f"since={FIGURES_DAY}T11:00&until={FIGURES_DAY}T19:00"
        shift = request(web.port, "GET", f"/api/shift?{query}", token=token).json()
        [t1] = [r["cells"] for r in shift["rows"] if r["level"] == "table"]
        head = shift["head"]
        assert t1[head.index(WIN.label)] == "+10.00 CHF" and t1[head.index(HANDLE.label)] == "10.00 CHF"
        assert {"label": WIN.label, "doc": WIN.doc} in shift["glossary"]
        csv_text = request(web.port, "GET", f"/shift/report.csv?{query}", token=token).body.decode()
        assert "win_minor" in csv_text.splitlines()[0] and ",1000," in csv_text.splitlines()[1]
        table = request(web.port, "GET", "/api/table?site=S1&table=T1", token=token).json()
        assert table["currency"] == "CHF" and table["labels"] == {"win": WIN.label, "seat_nets": SEAT_RESULTS}
        assert table["rounds"][0]["win"] == "+10.00 CHF" and table["rounds"][0]["seat_nets"] == [
            "Seat 1: -10.00 CHF"
        ]


def test_floor_rounds_per_hour_is_the_games_pace_whatever_the_window(house_won_ten, capsys) -> None:
    """Rounds per hour is rounds ÷ the hours the table was open (figures.ROUNDS_PER_HOUR): the same play read
    over 8 hours, 1 hour and a window just around it gives the same pace."""
    import csv
    import io
    from decimal import Decimal

    from floor.reports.figures import HOURS_OPEN, ROUNDS_PER_HOUR

    dsn, _win = house_won_ten
    paces = set()
    for start, end in (("11:00", "19:00"), ("11:30", "12:30"), ("11:59", "12:05")):
        out = _floor_cli(capsys, "shift", "--dsn", dsn, "--since", f"{FIGURES_DAY}T{start}",
                         "--until", f"{FIGURES_DAY}T{end}", "--csv")  # fmt: skip
        [t1] = [r for r in csv.DictReader(io.StringIO(out)) if r["level"] == "table"]
        assert Decimal(t1[HOURS_OPEN.column]) < Decimal("0.02")  # opened and closed within a minute
        paces.add(t1[ROUNDS_PER_HOUR.column])
    assert len(paces) == 1 and Decimal(paces.pop()) > 60, paces


def test_the_figures_glossary_is_the_docs_glossary() -> None:
    """docs/floor.md's glossary says what floor/reports/figures.py says, figure by figure."""
    from floor.reports.figures import GLOSSARY

    docs = (ROOT / "docs" / "floor.md").read_text(encoding="utf-8")
    for f in GLOSSARY:
        assert f"| {f.label} | `{f.column}` | {f.doc} |" in docs, f.name


def _every_parser() -> Iterator[tuple[str, Any]]:
    """Every `tablectl` command's parser, nested ones included, by its command line ("tablectl floor user add")."""
    import argparse

    from controller.cli.tablectl import COMMANDS, build_parser, tooling_commands

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> Iterator[tuple[str, Any]]:
        yield " ".join(path), parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield from walk(child, [*path, name])

    yield "tablectl", build_parser()
    for name in [*COMMANDS, *tooling_commands()]:
        root = build_parser(name)
        sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
        yield from walk(sub.choices[name], ["tablectl", name])


def _every_help() -> Iterator[tuple[str, str]]:
    """Every `tablectl ... --help`, as `tablectl COMMAND --help` prints it."""
    for path, parser in _every_parser():
        yield path, parser.format_help()


def test_every_option_and_argument_says_what_it_is() -> None:
    """Issue 42: `tablectl sign`'s `--user`/`--role` had no help; no option or argument anywhere goes without."""
    import argparse

    silent = [
        f"{path} {'/'.join(a.option_strings) or a.dest}"
        for path, parser in _every_parser()
        for a in parser._actions
        if a.help is None
        and not isinstance(a, argparse._SubParsersAction)  # a command list names its commands
    ]
    assert not silent, silent


ENV_VAR = re.compile(r"(?:TABLECTL|FLOOR)_[A-Z_]+")
ANY_SNAKE = re.compile(r"(?<![\w/.$<-])\*?[A-Za-z]*_[A-Za-z_]+(?![\w/.-])")  # state_dir, *_minor, KEY_FILE


def test_every_help_has_an_example_and_no_code_words() -> None:
    """Issue 42: every `--help` (all commands, recursively) says what to type with an example, in the operator's
    words: no backticks, no names from the code (`state_dir`, `*_minor`, `clear_jam`, `KEY_FILE`). The examples
    themselves are command lines as typed and are not read for words."""
    helps = dict(_every_help())
    assert len(helps) >= 40 and "tablectl floor user add" in helps and "tablectl journal export" in helps
    bad = {}
    for path, text in helps.items():
        body, _, examples = text.partition("\nexamples:\n")
        if path != "tablectl" and not examples.strip():
            bad[path] = "no example"
            continue
        found = [*ANY_SNAKE.findall(body), *code_names(body), *(["`"] if "`" in body else [])]
        found = [w for w in found if not ENV_VAR.fullmatch(w)]  # an environment variable is what one types
        if found:
            bad[path] = found
    assert not bad, bad
    top = helps["tablectl"]
    for group in ("the table", "the journal", "the casino floor", "development tooling"):
        assert group in top, group
    assert top.count("example: tablectl") >= 4


def test_dashboard_alert_texts_and_game_names_in_words() -> None:
    """Issue 42: the floor dashboard's alert list says what the terminal says: the reason with card faces and
    hands from 1 (not `KS`, `hand 0`, `no_insurance`), the kind in words, the time in local time (not ISO);
    a game by its name, not its profile id."""
    from controller.rules.profiles import game_name
    from floor.web.dashboard import table_alert

    kinds = list(ALERT_KINDS)
    for i, kind in enumerate(kinds):
        shown = table_alert("S1", "T1", {"alert_id": i + 1, "kind": kind, "severity": "critical", "level": 0,
                                         "raised_at": 1_700_000_000.0, "reason": REASON})  # fmt: skip
        text = " ".join(str(shown[k]) for k in ("kind_words", "message", "raised_at"))
        assert not code_names(text), (kind, code_names(text))
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+", shown["raised_at"])
    assert (
        shown["message"]
        == "PT-2001 r.58: K♠ given to Seat 2, hand 1 after no insurance: K♠ goes to the discard"
    )
    assert game_name("pt-2001") == "PT-2001: Portugal land casino, Portaria 1364/2001"
    assert game_name("pt-2001", short=True) == "PT-2001"  # a pit map tile's room
    assert (
        game_name("../../etc/passwd") == "../../etc/passwd"
    )  # not a shipped game: shown as sent, never opened


def test_dispute_report_says_seat_hands_only_on_a_split_with_the_currency_and_a_way_back() -> None:
    """Issue 42: "Seat 1" for a seat that played one hand, "Seat 1, hand 2" only on a split; the currency in the
    title (`--currency`, or the journal's); no empty player column; the floor's page links back to its table."""
    doc = json.loads(
        (ROOT / "docs" / "examples" / "rounds" / "pt-2001-insurance-split-r33-r26.json").read_text()
    )
    rep = dispute.build(doc, replay(doc), default_currency="EUR")
    out = dispute.text(rep)
    assert "amounts in EUR" in rep.title and "game PT-2001: Portugal land casino" in rep.title
    assert "Seat 1, hand 1" in out and "Seat 1, hand 2" in out  # seat 1 split its eights
    assert "Seat 3, hand" not in out and re.search(r"Seat 3\s+10♣ 9♣\s+19", out)  # seat 3 did not
    assert not re.search(r"^  .*\bplayer\b", out, re.M)  # nobody named a player: no empty player column
    page = dispute.html_page([rep], back=("/table?site=S1&table=T1", "Back to table S1/T1"))
    assert '<a href="/table?site=S1&amp;table=T1">Back to table S1/T1</a>' in page
    unnamed = dispute.build(doc, replay(doc))
    assert (
        "major units" not in unnamed.title
        and "in the table's currency, cents after the point" in unnamed.title
    )
