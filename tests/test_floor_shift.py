"""The shift's figures (issue 29): rounds played on the real table core, archived into a real PostgreSQL by the
archive's store functions, reported by ``tablectl floor shift``; every figure is recomputed here from what the
tables journaled (their ``round_settled`` records), per table, per pit and for the floor."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from controller.cli import main as tablectl
from controller.effects import JournalRecord
from controller.table.messages import messages
from floor.common.layout import LayoutError, parse_layout
from tablebench.table_testing import Harness, play_two_rounds
from tests.support.floor import migrated_database
from tests.test_floor_queries import WHEN, archive_harness

LAYOUT = """
[[pit]]
name = "Pit 1"
area = "Main floor"
tables = ["T1", "T2"]

[[pit]]
name = "Pit 2"
area = "Salon <b>privé</b>"
tables = ["T3"]
"""


@pytest.fixture
def dsn():
    with migrated_database() as d:
        yield d


def play_insured_round(h: Harness) -> None:
    """A round with insurance against an ace (PT-2001 r.33) and a bust, after a fresh opening."""
    h.open_continuous()
    h.dealer("place_bet", seat=3, amount=1000)
    h.dealer("place_bet", seat=4, amount=500)
    h.dealer("no_more_bets")
    for c in [
        "2C",
        "9S",
        "TH",
        "AD",
        "7S",
        "9D",
        "6C",
    ]:  # burn; seats 3 and 4, dealer A up; second cards; hole
        h.card(c)
    h.dealer("insurance", seat=3, amount=500)
    h.dealer("decline_insurance", seat=4)
    h.dealer("stand")  # seat 3 on 16? no: 9+7 = 16 stands (r.18: above 11)
    h.dealer("hit")
    h.card("KC")  # seat 4: T+9+K busts
    h.lid_cycle()


def journaled_settlements(h: Harness) -> list[dict]:
    return [
        e.data["settlement"] for e in h.effects if isinstance(e, JournalRecord) and e.kind == "round_settled"
    ]


def expected(settlements: list[dict]) -> dict[str, int]:
    main = sum(x["stake"] for s in settlements for x in s["hands"])
    side = sum(x["stake"] for s in settlements for x in s["side_bets"])
    ins = sum(x["amount"] for s in settlements for x in s["insurance"])
    net = sum(s["total_net"] for s in settlements)
    return {"rounds": len(settlements), "handle_main_minor": main, "handle_side_minor": side,
            "handle_insurance_minor": ins, "handle_minor": main + side + ins, "paid_minor": main + side + ins + net,
            "win_minor": -net}  # fmt: skip


def shift_rows(dsn: str, tmp_path: Path, capsys, *extra: str) -> list[dict]:
    layout = tmp_path / "floor.toml"
    layout.write_text(LAYOUT)
    since, until = WHEN - timedelta(hours=1), WHEN + timedelta(hours=7)
    args = ["floor", "shift", "--dsn", dsn, "--layout", str(layout), "--since", since.isoformat(),
            "--until", until.isoformat(), *(extra or ("--csv",))]  # fmt: skip
    assert tablectl(args) == 0
    out = capsys.readouterr().out
    return list(csv.DictReader(io.StringIO(out))) if not extra or "--csv" in extra else []


def opened_at(h: Harness, when: datetime) -> datetime:
    """When archive_harness stored the table's events/session opened (event i at ``when`` + i seconds)."""
    i = next(i for i, p in enumerate(messages(h.effects), start=1)
             if p.topic == "events/session" and p.data["action"] == "opened")  # fmt: skip
    return when + timedelta(seconds=i)


def test_a_shift_per_table_pit_and_floor_equals_what_the_tables_journaled(dsn, tmp_path, capsys) -> None:
    tables = {"T1": Harness(), "T2": Harness(), "T3": Harness()}
    play_two_rounds(tables["T1"])
    play_insured_round(tables["T2"])
    play_two_rounds(tables["T3"])
    opened = {}
    for i, (name, h) in enumerate(tables.items()):
        archive_harness(dsn, h, table=name, when=WHEN + timedelta(minutes=10 * i))
        opened[name] = opened_at(h, WHEN + timedelta(minutes=10 * i))
    rows = shift_rows(dsn, tmp_path, capsys)
    until = WHEN + timedelta(hours=7)
    by = {(r["level"], r["table"] or r["pit"] or r["level"]): r for r in rows}
    journals = {name: journaled_settlements(h) for name, h in tables.items()}
    assert journals["T2"][0]["insurance"], "the round has insurance"
    groups = {("table", n): [n] for n in tables} | {("pit", "Pit 1"): ["T1", "T2"], ("pit", "Pit 2"): ["T3"],
                                                    ("floor", "floor"): ["T1", "T2", "T3"]}  # fmt: skip
    for key, names in groups.items():
        row, want = by[key], expected([s for n in names for s in journals[n]])
        assert {k: int(row[k]) for k in want} == want, key
        assert row["archive"] == "complete" and row["currency"] == ""
        handle, win = want["handle_minor"], want["win_minor"]
        assert Decimal(row["hold_pct"]) == (Decimal(win) * 100 / handle).quantize(Decimal("0.01"))
        # the game's pace: rounds ÷ the hours the tables were open (sessions still open at the window's end)
        hours = sum(Decimal(str((until - opened[n]).total_seconds())) / 3600 for n in names)
        assert Decimal(row["hours_open"]) == hours.quantize(Decimal("0.01")), key
        assert Decimal(row["rounds_per_hour"]) == (Decimal(want["rounds"]) / hours).quantize(Decimal("0.1"))
    assert by[("table", "T2")]["pit"] == "Pit 1" and by[("table", "T3")]["area"] == "Salon <b>privé</b>"


def test_a_hole_makes_the_table_its_pit_and_the_floor_incomplete_with_the_ids(dsn, tmp_path, capsys) -> None:
    t1, t3 = Harness(), Harness()
    play_two_rounds(t1)
    play_two_rounds(t3)
    archive_harness(dsn, t1, table="T1", skip={5, 6})
    archive_harness(dsn, t3, table="T3")
    rows = shift_rows(dsn, tmp_path, capsys)
    verdict = {
        (r["level"], r["table"] or r["pit"] or r["level"]): (r["archive"], r["incomplete"]) for r in rows
    }
    assert verdict[("table", "T1")][0] == "INCOMPLETE" and "5-6" in verdict[("table", "T1")][1]
    assert verdict[("pit", "Pit 1")][0] == "INCOMPLETE" and verdict[("floor", "floor")][0] == "INCOMPLETE"
    assert verdict[("table", "T3")] == ("complete", "") and verdict[("pit", "Pit 2")] == ("complete", "")


def test_the_shift_page_is_self_contained_escaped_and_says_incomplete(dsn, tmp_path, capsys) -> None:
    t1 = Harness()
    play_two_rounds(t1)
    archive_harness(dsn, t1, table="T1", skip={7})
    page = tmp_path / "shift.html"
    shift_rows(dsn, tmp_path, capsys, "--html", str(page))
    text = page.read_text()
    assert "default-src 'none'" in text and "<script" not in text and "http" not in text.split("</head>")[1]
    assert "INCOMPLETE" in text and "win over the shift" in text and "rounds per hour" in text
    assert "<b>privé</b>" not in text  # text from the layout file is shown as text


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('[[pit]]\nname = "P"\narea = "A"\ntables = ["T1"]\ncolour = "red"', "colour: unknown key"),
        (
            '[[pit]]\nname = "P"\narea = "A"\ntables = ["T1"]\n[[pit]]\nname = "Q"\narea = "A"\ntables = ["T1"]',
            "T1 is already in pit 'P'",
        ),
        ('[[pit]]\nname = "P"\narea = "A"\ntables = ["../x"]', "is not a table id"),
        ('[[pit]]\nname = "P\\u0000"\narea = "A"\ntables = []', "printable name"),
        ("pits = 1", "key pits: unknown"),
    ],
)
def test_a_bad_layout_is_refused_naming_the_key(text: str, why: str) -> None:
    with pytest.raises(LayoutError, match=why):
        parse_layout(text, "floor.toml")


@pytest.mark.parametrize("command", ["shift", "judge"])
@pytest.mark.parametrize(
    "window",
    [
        ["--since", "2026-11-26T06:00", "--until", "2026-11-26T06:00"],  # does not start before it ends
        ["--since", "2026-10-01T00:00", "--until", "2026-11-26T00:00"],  # longer than MAX_WINDOW (31 days)
        ["--until", "2026-11-26T06:00", "--hours", "-1"],
    ],
)
def test_a_window_the_floor_commands_refuse_is_refused_before_the_database(command, window, capsys) -> None:
    """``floor shift`` and ``floor judge`` read their window with one helper (floor/cli/shift.py ``window``): a
    window refused is exit 2 with the command's name, and no connection is tried (a closed socket would be 1)."""
    assert tablectl(["floor", command, "--dsn", "host=/nonexistent dbname=none", *window]) == 2
    assert capsys.readouterr().err == (
        f"floor {command}: the window must start before it ends and span at most 31 days\n"
    )


def test_a_table_the_layout_does_not_name_is_shown_unassigned() -> None:
    layout = parse_layout(LAYOUT)
    assert layout.pit_of("T9").name == "unassigned" and layout.pit_of("T3").name == "Pit 2"
    assert layout.pit_of("T9").area == "not in the floor layout"  # never "unassigned / unassigned" (issue 42)


def test_pits_come_in_the_order_the_layout_lists_them_whatever_their_areas() -> None:
    text = "".join(
        f'[[pit]]\nname = "Pit {n}"\narea = "{"AB"[n % 2]}"\ntables = ["T{n}"]\n' for n in (1, 2, 3)
    )
    assert parse_layout(text).order() == {"Pit 1": 0, "Pit 2": 1, "Pit 3": 2}


def test_each_round_and_dealer_error_goes_to_the_dealer_on_duty_two_dealers_on_one_table(
    dsn, tmp_path, capsys
) -> None:
    """Issue 29: Ana deals a round with a dealer error (PT-2001 r.19: a card drawn on 19 after the round
    ended), João takes over between rounds and deals two. Every dealer row is recomputed from the table's
    journal (its dealer_signed_in, round_settled and dealer_error records, in order); hours on duty from the
    archived sign-ins (one second apart, as archive_harness stores them) to the window's end."""
    h = Harness()
    h.open_continuous()
    h.dealer("dealer_sign_in", name="Ana")
    h.start_round({1: 1000})
    for c in ["2C", "TS", "9D", "7S", "KH"]:  # burn, seat 1, dealer 9, seat 1 17, dealer hole K: 19
        h.card(c)
    h.dealer("stand")
    h.card("5D")  # drawn on 19 after the round ended: a dealer error (PT-2001 r.19)
    h.lid_cycle()
    h.dealer("next_round")
    h.dealer("dealer_sign_in", name="João")
    for _ in range(2):
        h.start_round({1: 1000})
        for c in ["TS", "9D", "7S", "KH"]:
            h.card(c)
        h.dealer("stand")
        h.lid_cycle()
        h.dealer("next_round")
    archive_harness(dsn, h, table="T1")

    on_duty, want = None, {}
    for fx in h.effects:
        if isinstance(fx, JournalRecord) and fx.kind == "dealer_signed_in":
            on_duty = fx.data["dealer"]
        elif isinstance(fx, JournalRecord) and fx.kind in ("round_settled", "dealer_error"):
            counts = want.setdefault(on_duty, {"rounds": 0, "dealer_errors": 0})
            counts["rounds" if fx.kind == "round_settled" else "dealer_errors"] += 1
    assert want == {"Ana": {"rounds": 1, "dealer_errors": 1}, "João": {"rounds": 2, "dealer_errors": 0}}
    signed = [i for i, p in enumerate(messages(h.effects), start=1) if p.topic == "events/dealer"]
    until = WHEN + timedelta(hours=7)
    hours = {
        "Ana": Decimal(signed[1] - signed[0]) / 3600,
        "João": Decimal(str((until - (WHEN + timedelta(seconds=signed[1]))).total_seconds())) / 3600,
    }
    rows = {r["dealer"]: r for r in shift_rows(dsn, tmp_path, capsys) if r["level"] == "dealer"}
    assert set(rows) == {"Ana", "João"}  # no round without a dealer signed in
    for name, counts in want.items():
        row = rows[name]
        assert (int(row["rounds"]), int(row["dealer_errors"])) == (counts["rounds"], counts["dealer_errors"])
        assert row["table"] == "T1" and row["archive"] == "complete"
        assert (
            Decimal(row["hours_on_duty"]) == hours[name].quantize(Decimal("0.01")) and not row["hours_open"]
        )
        assert Decimal(row["rounds_per_hour"]) == (counts["rounds"] / hours[name]).quantize(Decimal("0.1"))
        per_100 = Decimal(counts["dealer_errors"] * 100) / counts["rounds"]
        assert Decimal(row["errors_per_100_rounds"]) == per_100.quantize(Decimal("0.1"))
    page = tmp_path / "shift.html"
    shift_rows(dsn, tmp_path, capsys, "--html", str(page))
    text = page.read_text()
    assert "<h2>Dealers</h2>" in text and '<td class="t">João</td>' in text


def test_a_report_reads_one_snapshot_of_the_archive(dsn) -> None:
    """Issue 36: every query of a report reads one snapshot (queries.consistent_read). A worker committing two
    rounds between the floor's rows and the dealers' rows is in neither, so both count the same rounds; the same
    two reads outside one snapshot disagree (how one page counted 417 rounds for the floor, 419 for its dealers)."""
    import psycopg

    from floor.common.layout import Layout
    from floor.reports.queries import consistent_read
    from floor.reports.shift import shift_report
    from floor.reports.shift_dealers import dealer_rows

    first, second = Harness(), Harness()
    play_two_rounds(first)
    play_two_rounds(second)
    archive_harness(dsn, first, table="T1")
    since, until = WHEN - timedelta(hours=1), WHEN + timedelta(hours=7)
    with psycopg.connect(dsn) as conn, consistent_read(conn):
        rows = shift_report(conn, since, until, Layout())
        archive_harness(dsn, second, table="T2")  # a worker commits meanwhile
        dealers = dealer_rows(conn, since, until)
    assert rows[-1].figures.rounds == sum(d.rounds for d in dealers) == 2
    with psycopg.connect(dsn) as conn:
        assert sum(d.rounds for d in dealer_rows(conn, since, until)) == 4
