"""Floor queries on archived events (issue 18): the events come from the real table core (``Harness``), are
stored by the archive's own store functions into a real PostgreSQL database, and read back by the commands.

A round rebuilt from the archive must re-settle with ``tablectl replay`` to exactly what the table settled."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import psycopg
import pytest

from controller.cli import main as tablectl
from controller.floor import store
from controller.floor.messages import Envelope, TableRef
from controller.table.messages import messages
from tablebench.table_testing import Harness
from tests.support.floor import temp_database


@pytest.fixture
def dsn():
    with temp_database() as d:
        with psycopg.connect(d) as conn:
            store.migrate(conn)
        yield d


def archive_harness(
    dsn: str, h: Harness, site: str = "S1", table: str = "T1", skip: set[int] = frozenset()
) -> int:
    """Store what the core published, as the archive would (event ids in publication order)."""
    ref, envelopes = TableRef(site, table), []
    when = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    for i, p in enumerate(messages(h.effects), start=1):
        if i in skip:
            continue
        doc = {
            "data": p.data,
            "event_id": i,
            "table": table,
            "ts": "2026-11-23T12:00:00.000Z",
            "type": p.event_type,
        }
        raw = json.dumps(doc).encode()
        envelopes.append(Envelope(ref, p.topic, i, p.event_type, when, p.data, raw, "live"))
    with psycopg.connect(dsn) as conn, conn.transaction():
        store.store_envelopes(conn.cursor(), envelopes)
    return len(envelopes)


def play_two_rounds(h: Harness) -> None:
    h.open_continuous()
    h.dealer("place_bet", seat=1, amount=1000)
    h.dealer("place_bet", seat=2, amount=500)
    h.dealer("no_more_bets")
    for c in ["2C", "TS", "6D", "9H", "7S", "KH", "8D"]:  # burn (PT-2001 r.10), then the deal (r.17)
        h.card(c)
    h.dealer("stand")  # seat 1: the decision names no seat, the turn does
    h.card("5C")  # seat 2 hits by taking a card
    h.lid_cycle()
    h.dealer("next_round")
    h.dealer("place_bet", seat=1, amount=2000)
    h.dealer("no_more_bets")
    for c in ["5S", "6H", "4D", "9C"]:
        h.card(c)
    h.dealer("double")
    h.card("TH")
    h.card("3S")  # the dealer draws to 18 (PT-2001 r.19)
    h.lid_cycle()


def test_archived_rounds_replay_to_the_settlement_the_table_published(dsn, tmp_path, capsys):
    h = Harness()
    play_two_rounds(h)
    archive_harness(dsn, h)
    out_dir = tmp_path / "rounds"
    assert (
        tablectl(
            ["floor", "rounds", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23", "--out", str(out_dir)]
        )
        == 0
    )
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2 and all(r["complete"] for r in lines), [r["missing"] for r in lines]
    for r in lines:
        files = list(out_dir.glob(f"T1-{r['round_id']}.json"))
        assert len(files) == 1
        assert tablectl(["replay", str(files[0])]) == 0
        replayed = json.loads(capsys.readouterr().out)
        settled = r["settlement"]
        assert replayed["settlement"]["hands"] == settled["hands"]
        assert replayed["settlement"]["total_net"] == settled["total_net"]
        assert replayed["settlement"]["seat_nets"] == settled["seat_nets"]


def test_a_round_with_an_event_missing_says_what_is_missing_instead_of_replaying_wrong(dsn, capsys):
    h = Harness()
    play_two_rounds(h)
    published = messages(h.effects)
    card = next(
        i for i, p in enumerate(published, start=1) if p.topic == "events/card" and p.data.get("code") == "TS"
    )
    archive_harness(dsn, h, skip={card})
    assert tablectl(["floor", "rounds", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23"]) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    assert first["complete"] is False and any("not archived" in m for m in first["missing"])


def synthetic(
    dsn: str, table: str, events: list[tuple[str, str, dict]], site: str = "S1", hour: int = 13
) -> None:
    ref, envs = TableRef(site, table), []
    for i, (topic, etype, data) in enumerate(events, start=1000):
        when = datetime(2026, 11, 23, hour, i % 60, tzinfo=UTC)
        envs.append(Envelope(ref, topic, i, etype, when, data, json.dumps(data).encode(), "live"))
    with psycopg.connect(dsn) as conn, conn.transaction():
        store.store_envelopes(conn.cursor(), envs)


def test_day_report_per_table_as_csv_and_escaped_html_with_the_meter_plot(dsn, tmp_path, capsys):
    h = Harness()
    play_two_rounds(h)
    archive_harness(dsn, h)
    synthetic(dsn, "T1", [
        ("events/jackpot", "jackpot", {"action": "contribution", "meter": 100_000}),
        ("events/jackpot", "jackpot", {"action": "contribution", "meter": 100_500}),
        ("events/fault", "fault", {"fault": "jam", "state": "raised", "info": {}}),
        ("events/fault", "fault", {"fault": "jam", "state": "cleared", "info": {}}),
        ("events/dealer_error", "dealer_error", {"reason": "card to the wrong seat"}),
    ])  # fmt: skip
    # a hostile table (a name no topic could carry, stored behind the door's back) and junk numbers
    synthetic(dsn, "<script>alert(1)</script>", [
        ("events/settlement", "settlement", {"round_id": "x", "hands": [{"stake": "lots"}], "total_net": None}),
        ("events/round", "round", {"round_id": "x", "phase": "void"}),
        ("events/jackpot", "jackpot", {"action": "<b>", "meter": "many"}),
    ], site="=cmd|' /C calc'!A0")  # fmt: skip
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", "2026-11-23"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "site,table,rounds,staked,paid,house_net,dealer_errors,faults,voids,jackpot_meter"
    # round 1: seat 1 pushes 1000, seat 2 wins 500 on 500; round 2: seat 1 doubles 2000 -> 4000 and wins
    assert "S1,T1,2,5500,10000,-4500,1,1,0,100500" in lines
    hostile = next(x for x in lines if "script" in x)
    assert hostile.startswith("'=cmd") and hostile.endswith(",1,0,0,0,0,0,1,")  # no formula, junk is 0
    page = tmp_path / "report.html"
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", "2026-11-23", "--html", str(page)]) == 0
    text = page.read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert (
        "<polyline" in text
        and "1,005.00" in text
        and "http" not in text.replace("http-equiv", "").replace("http://www.w3.org/2000/svg", "")
    )  # self-contained: nothing fetched


def test_jackpot_meter_history_per_table(dsn, capsys):
    synthetic(dsn, "T1", [
        ("events/jackpot", "jackpot", {"action": "contribution", "meter": 100_000}),
        ("events/jackpot", "jackpot", {"action": "paid", "meter": 20_000}),
    ])  # fmt: skip
    synthetic(dsn, "T2", [("events/jackpot", "jackpot", {"action": "contribution", "meter": 7})])
    assert tablectl(["floor", "jackpot", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23", "--until",
                     "2026-11-24"]) == 0  # fmt: skip
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "site,table,event_id,ts,action,meter"
    assert [r.split(",")[4:] for r in rows[1:]] == [["contribution", "100000"], ["paid", "20000"]]
