"""Floor queries on archived events (issue 18): the events come from the real table core (``Harness``), are
stored by the archive's own store functions into a real PostgreSQL database, and read back by the commands.

A round rebuilt from the archive must re-settle with ``tablectl replay`` to exactly what the table settled."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from controller.cli import main as tablectl
from controller.table.messages import messages
from floor.archive import store
from floor.common.messages import Envelope, TableRef
from floor.web.dashboard import snapshot
from tablebench.table_testing import Harness, play_two_rounds
from tests.support.floor import migrated_database


@pytest.fixture
def dsn():
    with migrated_database() as d:
        yield d


WHEN = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def archive_harness(
    dsn: str,
    h: Harness,
    site: str = "S1",
    table: str = "T1",
    skip: set[int] | range = frozenset(),
    when: datetime = WHEN,
) -> int:
    """Store what the core published, as the archive would (event ids in publication order, one second apart
    from ``when``)."""
    ref, envelopes = TableRef(site, table), []
    for i, p in enumerate(messages(h.effects), start=1):
        if i in skip:
            continue
        ts = when + timedelta(seconds=i)
        doc = {
            "data": p.data,
            "event_id": i,
            "table": table,
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "type": p.event_type,
        }
        raw = json.dumps(doc).encode()
        envelopes.append(Envelope(ref, p.topic, i, p.event_type, ts, p.data, raw, "live"))
    with psycopg.connect(dsn) as conn, conn.transaction():
        store.store_envelopes(conn.cursor(), envelopes)
    return len(envelopes)


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
        assert tablectl(["replay", "--json", str(files[0])]) == 0
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
    dsn: str,
    table: str,
    events: list[tuple[str, str, dict]],
    site: str = "S1",
    hour: int = 13,
    first: int = 1,
) -> None:
    ref, envs = TableRef(site, table), []
    for i, (topic, etype, data) in enumerate(events, start=first):
        when = datetime(2026, 11, 23, hour, i % 60, tzinfo=UTC)
        envs.append(Envelope(ref, topic, i, etype, when, data, json.dumps(data).encode(), "live"))
    with psycopg.connect(dsn) as conn, conn.transaction():
        store.store_envelopes(conn.cursor(), envs)


def test_day_report_per_table_as_csv_and_escaped_html_with_the_meter_plot(dsn, tmp_path, capsys):
    h = Harness()
    play_two_rounds(h)
    n = archive_harness(dsn, h)
    synthetic(dsn, "T1", [
        ("events/jackpot", "jackpot", {"action": "contribution", "meter": 100_000}),
        ("events/jackpot", "jackpot", {"action": "contribution", "meter": 100_500}),
        ("events/fault", "fault", {"fault": "jam", "state": "raised", "info": {}}),
        ("events/fault", "fault", {"fault": "jam", "state": "cleared", "info": {}}),
        ("events/dealer_error", "dealer_error", {"reason": "card to the wrong seat"}),
        ("state/jackpot", "state", {"meter": 100_500, "currency": "EUR"}),
    ], first=n + 1)  # fmt: skip
    # a hostile table (a name no topic could carry, stored behind the door's back) and junk numbers
    synthetic(dsn, "<script>alert(1)</script>", [
        ("events/settlement", "settlement", {"round_id": "x", "hands": [{"stake": "lots"}], "total_net": None}),
        ("events/round", "round", {"round_id": "x", "phase": "void"}),
        ("events/jackpot", "jackpot", {"action": "<b>", "meter": "many"}),
    ], site="=cmd|' /C calc'!A0", first=1000)  # fmt: skip
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", "2026-11-23"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "site,table,archive,rounds,handle_minor,paid_minor,win_minor,dealer_errors,faults,voids,"
        "jackpot_meter_minor,currency,archived_to,known_to,missing_ids,pending_ids"
    )
    # round 1: seat 1 pushes 1000, seat 2 wins 500 on 500; round 2: seat 1 doubles 2000 -> 4000 and wins
    assert f"S1,T1,complete,2,5500,10000,-4500,1,1,0,100500,EUR,{n + 6},{n + 6},," in lines
    hostile = next(x for x in lines if "script" in x)
    # no formula, junk is 0; its ids start at 1000: 1-999 were never archived, the day is not complete
    assert hostile.startswith("'=cmd") and hostile.endswith(",INCOMPLETE,1,0,0,0,0,0,1,,,0,1002,,1-999")
    page = tmp_path / "report.html"
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", "2026-11-23", "--html", str(page)]) == 0
    text = page.read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert (
        "<polyline" in text
        and "1,005.00 EUR" in text
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
    assert (
        rows[0] == "site,table,event_id,ts,action,meter_minor,currency,archive,gap_before,link,amount_minor"
    )
    assert [r.split(",")[4:] for r in rows[1:]] == [
        ["contribution", "100000", "", "complete", "", "", ""],
        ["paid", "20000", "", "complete", "", "", ""],
    ]


# ---- every figure says what it is built on (issue 24) ----
def play_rounds(h: Harness, count: int) -> list[int]:
    """``count`` rounds on the real core, seat 1 betting 1000 x round number: odd rounds lose (16 against the
    dealer's 17, PT-2001 r.19), even rounds win (19). Returns each round's net for the player."""
    h.open_continuous()
    nets = []
    for k in range(1, count + 1):
        if k > 1:
            h.dealer("next_round")
        h.dealer("place_bet", seat=1, amount=1000 * k)
        h.dealer("no_more_bets")
        if k == 1:
            h.card("2C")  # the shoe's burn (PT-2001 r.10)
        for c in ["TS", "7D", "6H" if k % 2 else "9H", "KC"]:
            h.card(c)
        h.dealer("stand")
        h.lid_cycle()
        nets.append(-1000 * k if k % 2 else 1000 * k)
    return nets


def round_spans(h: Harness) -> dict[str, tuple[int, int]]:
    """Each round's first and last event id, as published."""
    spans: dict[str, tuple[int, int]] = {}
    for i, p in enumerate(messages(h.effects), start=1):
        rid = p.data.get("round_id") if isinstance(p.data, dict) else None
        if isinstance(rid, str):
            lo, _ = spans.get(rid, (i, i))
            spans[rid] = (lo, i)
    return spans


def own_settlements(h: Harness) -> dict[str, dict]:
    return {p.data["round_id"]: p.data for p in messages(h.effects) if p.topic == "events/settlement"}


def report_row(dsn: str, capsys, day: str = "2026-11-23", table: str = "T1") -> tuple[dict[str, str], str]:
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", day]) == 0
    out = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out.out)))
    return next(r for r in rows if r["table"] == table), out.err


def test_a_day_with_a_hole_in_the_archive_is_marked_incomplete_and_names_the_ids(dsn, tmp_path, capsys):
    h = Harness()
    nets = play_rounds(h, 4)
    spans = sorted(round_spans(h).values())
    hole = range(spans[0][1] + 1, spans[2][0])  # every event of round 2, and what lies between
    archive_harness(dsn, h, skip=hole)
    row, err = report_row(dsn, capsys)
    # the sum of what is archived, never presented as the day's: the table settled sum(nets)
    assert row["rounds"] == "3" and int(row["win_minor"]) == -(sum(nets) - nets[1])
    assert row["archive"] == "INCOMPLETE"
    assert row["pending_ids"] == f"{hole.start}-{hole.stop - 1}" and row["missing_ids"] == ""
    assert row["archived_to"] == str(hole.start - 1)
    assert "S1/T1 2026-11-23: INCOMPLETE" in err and f"ids {hole.start}-{hole.stop - 1}" in err
    page = tmp_path / "day.html"
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", "2026-11-23", "--html", str(page)]) == 0
    text = page.read_text()
    assert 'class="incomplete"' in text and "INCOMPLETE" in text and f"{hole.start}-{hole.stop - 1}" in text

    # the repair gives up: the ids are missing for good, the day stays incomplete and says so
    with psycopg.connect(dsn) as conn, conn.transaction():
        for i in hole:
            conn.execute(
                "INSERT INTO missing_events (site, table_id, event_id) VALUES ('S1', 'T1', %s)", (i,)
            )
    row, err = report_row(dsn, capsys)
    assert row["archive"] == "INCOMPLETE" and row["pending_ids"] == ""
    assert row["missing_ids"] == f"{hole.start}-{hole.stop - 1}" and "missing for good" in err

    # the events arrive after all: complete, and the day's total is the table's own
    archive_harness(dsn, h, skip=set(range(1, hole.start)) | set(range(hole.stop, 10_000)))
    row, err = report_row(dsn, capsys)
    assert row["archive"] == "complete" and row["missing_ids"] == row["pending_ids"] == ""
    assert int(row["win_minor"]) == -sum(nets) == -sum(s["total_net"] for s in own_settlements(h).values())
    assert "S1/T1 2026-11-23: complete" in err


def test_a_hole_on_another_day_leaves_this_day_complete_and_a_day_lost_whole_is_listed(dsn, capsys):
    h = Harness()
    play_rounds(h, 2)
    spans = sorted(round_spans(h).values())
    split = spans[1][0]  # round 2 starts on the 23rd
    lost = range(spans[0][0] + 2, spans[0][0] + 4)  # two events of round 1, on the 22nd
    archive_harness(
        dsn, h, skip=set(range(split, 10_000)) | set(lost), when=datetime(2026, 11, 22, 12, tzinfo=UTC)
    )
    archive_harness(dsn, h, skip=range(1, split))
    row, _ = report_row(dsn, capsys, "2026-11-23")
    assert row["archive"] == "complete" and row["rounds"] == "1"
    row, _ = report_row(dsn, capsys, "2026-11-22")
    assert row["archive"] == "INCOMPLETE" and row["pending_ids"] == f"{lost.start}-{lost.stop - 1}"

    # a table whose whole day fell in a hole: no event archived that day, yet it is listed, INCOMPLETE
    synthetic(dsn, "T9", [("events/lid", "lid", {"state": "open"})], hour=1, first=1)
    with psycopg.connect(dsn) as conn, conn.transaction():
        store.store_envelopes(conn.cursor(), [Envelope(TableRef("S1", "T9"), "events/lid", 50, "lid",
                              datetime(2026, 11, 25, 1, tzinfo=UTC), {"state": "closed"}, b"{}", "live")])  # fmt: skip
    row, _ = report_row(dsn, capsys, "2026-11-24", table="T9")
    assert row["archive"] == "INCOMPLETE" and row["rounds"] == "0" and row["pending_ids"] == "2-49"


def test_floor_rounds_counts_rounds_lost_to_a_hole_instead_of_0_incomplete(dsn, capsys):
    h = Harness()
    play_rounds(h, 5)
    spans = sorted(round_spans(h).values())
    first_hole = range(spans[0][0] - 1, spans[1][0])  # round 1 whole (and the event before it)
    second_hole = range(spans[2][1] + 1, spans[4][0])  # round 4 whole
    archive_harness(dsn, h, skip=set(first_hole) | set(second_hole))
    assert tablectl(["floor", "rounds", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23"]) == 0
    out = capsys.readouterr()
    lines = [json.loads(x) for x in out.out.splitlines()]
    archived = [r for r in lines if not r["absent"]]
    assert len(archived) == 3 and all(r["complete"] for r in archived)
    absent = [r for r in lines if r["absent"]]
    session = archived[0]["round_id"].rsplit("-", 1)[0]
    assert [r["round_id"] for r in absent if r["round_id"]] == [f"{session}-0004"]  # ids jump 0003 -> 0005
    window_holes = [r["events"] for r in absent if r["round_id"] is None]
    assert [first_hole.start, first_hole.stop - 1] in window_holes  # round 1 and its id are not known at all
    assert all(not r["complete"] for r in absent)
    assert "0 incomplete" not in out.err and "INCOMPLETE" in out.err


def test_rounds_with_a_dealer_error_a_void_card_and_burns_round_trip_to_replay(dsn, tmp_path, capsys):
    """PT-2001 r.10 burn and a card the dealer drew on 19 after the round was settled (r.19: void, a dealer
    error); MO-2004 art.4.1 six burns at shoe start, art.5.1.1 a card out of the shoe face up (void, a dealer
    error, the hand gets the next card), art.4.2 the burn before the dealer's second card. Archived, exported
    with ``floor rounds --out``, replayed by ``tablectl replay``: settled as the table settled."""
    pt = Harness()
    pt.open_continuous()
    pt.dealer("place_bet", seat=1, amount=1000)
    pt.dealer("no_more_bets")
    for c in ["2C", "TS", "9D", "7S", "KH"]:
        pt.card(c)
    pt.dealer("stand")
    late = pt.card("5D")
    assert late["recipient"] == "void" and late["errors"][0]["rule"] == "PT-2001 r.19"
    pt.lid_cycle()
    mo = Harness()
    mo.open_continuous("mo-2004")
    mo.dealer("place_bet", seat=1, amount=10000)
    mo.dealer("no_more_bets")
    for c in ["2C", "2D", "2H", "2S", "3C", "3D", "TS", "9D", "5S"]:
        mo.card(c)
    face_up = mo.card("4C", face_up=True)
    assert face_up["recipient"] == "void" and face_up["errors"][0]["rule"] == "MO-2004 art.5.1.1"
    mo.card("4D")
    mo.dealer("stand")
    assert mo.card("6C")["recipient"] == "burn"
    mo.card("8H")
    mo.lid_cycle()
    archive_harness(dsn, pt, table="T1")
    archive_harness(dsn, mo, table="T2")
    cases = (("T1", pt, "PT-2001 r.19", "5D", 1), ("T2", mo, "MO-2004 art.5.1.1", "4C", 7))
    for table, h, rule, void_card, burns in cases:
        out_dir = tmp_path / table
        args = [
            "floor",
            "rounds",
            "--dsn",
            dsn,
            "--table",
            table,
            "--since",
            "2026-11-23",
            "--out",
            str(out_dir),
        ]
        assert tablectl(args) == 0
        (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert line["complete"], line["missing"]
        (path,) = out_dir.glob("*.json")
        exported = json.loads(path.read_text())
        assert {"card": void_card, "recipient": "void"}.items() <= next(
            c for c in exported["cards"] if c["card"] == void_card
        ).items()
        assert tablectl(["replay", "--json", str(path)]) == 0, capsys.readouterr()
        replayed = json.loads(capsys.readouterr().out)
        own = own_settlements(h)[line["round_id"]]
        for key in (
            "dealer_cards",
            "dealer_total",
            "hands",
            "insurance",
            "side_bets",
            "seat_nets",
            "total_net",
        ):
            assert replayed["settlement"][key] == own[key], key
        assert [e["rule"] for e in replayed["dealer_errors"]] == [rule]
        assert [c["card"] for c in replayed["cards"] if c["to"] == "void"] == [void_card]
        assert sum(1 for c in replayed["cards"] if c["to"] == "burn") == burns


def test_jackpot_history_says_where_events_are_missing_and_what_a_checkpoint_says_exists(dsn, capsys):
    synthetic(dsn, "T1", [
        ("events/jackpot", "jackpot", {"action": "contribution", "meter": 100_000}),
        ("events/jackpot", "jackpot", {"action": "contribution", "meter": 100_700}),
    ])  # fmt: skip
    synthetic(dsn, "T1", [("events/jackpot", "jackpot", {"action": "paid", "meter": 20_000})], first=5)
    # the table signed a checkpoint naming event 9: 6-9 exist on the table, none archived yet
    with psycopg.connect(dsn) as conn, conn.transaction():
        conn.execute(
            "INSERT INTO checkpoints (site, table_id, seq, event_id, hash, prev_seq, prev_hash, last_event_id,"
            " key_id, doc) VALUES ('S1', 'T1', 40, 5, %s, 0, %s, 9, 'k', '{}')",
            ("a" * 64, "0" * 64),
        )
        # a checkpoint the floor rejected (forged signature) proves nothing: its 500 is not believed
        conn.execute(
            "INSERT INTO checkpoints (site, table_id, seq, event_id, hash, prev_seq, prev_hash, last_event_id,"
            " key_id, doc, signature_ok, chain) VALUES ('S1', 'T1', 41, 6, %s, 40, %s, 500, 'k', '{}', false,"
            " 'rejected')",
            ("b" * 64, "a" * 64),
        )
        conn.execute("UPDATE floor_tables SET status = 'offline', status_at = '2026-11-23T14:00:00Z'")
    assert tablectl(["floor", "jackpot", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23", "--until",
                     "2026-11-24"]) == 0  # fmt: skip
    out = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out.out)))
    assert [(r["meter_minor"], r["archive"], r["gap_before"]) for r in rows] == [
        ("100000", "INCOMPLETE", ""),
        ("100700", "INCOMPLETE", ""),
        (
            "20000",
            "INCOMPLETE",
            "3-4",
        ),  # the meter fell from 100,700 to 20,000: what happened between is lost
    ]
    assert "S1/T1: INCOMPLETE (archived to event 2, known to 9)" in out.err and "ids 3-4 6-9" in out.err
    assert "table offline since 2026-11-23T14:00:00+00:00: later events may not have arrived" in out.err


def test_more_holes_than_are_read_never_leave_a_table_complete(dsn, capsys, monkeypatch):
    """Holes are read up to a limit; a table whose holes were not all read is INCOMPLETE, never complete."""
    for table in ("T1", "T2"):
        synthetic(dsn, table, [("events/lid", "lid", {"state": "open"})] * 2)
        synthetic(dsn, table, [("events/lid", "lid", {"state": "open"})] * 2, first=5)
    monkeypatch.setattr("floor.reports.coverage.HOLE_LIMIT", 1)
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", "2026-11-23"]) == 0
    out = capsys.readouterr()
    rows = {r["table"]: r for r in csv.DictReader(io.StringIO(out.out))}
    assert rows["T1"]["archive"] == rows["T2"]["archive"] == "INCOMPLETE"
    assert "not all examined" in out.err


def test_the_dashboard_snapshot_says_whether_each_tables_archive_is_complete(dsn):
    synthetic(dsn, "T1", [("events/lid", "lid", {"state": "open"})] * 3)
    synthetic(dsn, "T2", [("events/lid", "lid", {"state": "open"})] * 2)
    synthetic(dsn, "T2", [("events/lid", "lid", {"state": "open"})], first=6)
    with psycopg.connect(dsn) as conn:
        tables = {t["table"]: t["archive"] for t in snapshot(conn)["tables"]}
    keys = ("complete", "archived_to", "known_to", "missing", "pending")
    assert {k: tables["T1"][k] for k in keys} == {"complete": True, "archived_to": 3, "known_to": 3, "missing": "",
                                                  "pending": ""}  # fmt: skip
    assert {k: tables["T2"][k] for k in keys} == {
        "complete": False,
        "archived_to": 2,
        "known_to": 6,
        "missing": "",
        "pending": "3-5",
    }
    assert (
        tables["T1"]["summary"].startswith("complete")
        and "pending (not archived yet)" in tables["T2"]["summary"]
    )


def test_a_round_whose_dealing_event_is_lost_is_listed_incomplete_not_dropped(dsn, capsys):
    h = Harness()
    play_rounds(h, 3)
    second = sorted(round_spans(h).values())[1]
    archive_harness(dsn, h, skip={second[0]})  # round 2's dealing event (its bets) never arrived
    assert tablectl(["floor", "rounds", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    rounds = [r for r in lines if not r["absent"]]
    assert [r["complete"] for r in rounds] == [True, False, True]
    assert any("dealing event (bets) is not archived" in m for m in rounds[1]["missing"])


def test_a_table_out_of_reach_is_never_complete_and_every_figure_says_since_when(dsn, capsys):
    """Issue 36: the table was last heard from at 12:05 and is out of reach since (no contact for 30 s; floor/
    contact.py). Every figure that includes the time since says so, with what it rests on: ``floor report``,
    ``floor shift``, ``floor rounds``, the dashboard. A window that ended before the table went out of reach stays
    complete; contact again, and the same figures are complete."""
    h = Harness()
    play_rounds(h, 2)
    n = archive_harness(dsn, h)
    last = WHEN + timedelta(seconds=n)  # the newest archived event (archive_harness: one a second)
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "UPDATE floor_tables SET link = 'up', last_contact_at = %s", (WHEN + timedelta(minutes=5),)
        )
    words = f"out of reach since 2026-11-23 12:05 UTC, figures to {last:%H:%M} UTC"
    row, err = report_row(dsn, capsys)
    assert row["archive"] == "INCOMPLETE" and words in err
    window = ["--since", "2026-11-23T08:00", "--until", "2026-11-23T16:00"]
    assert tablectl(["floor", "shift", "--dsn", dsn, *window, "--csv"]) == 0
    shift = [r for r in csv.DictReader(io.StringIO(capsys.readouterr().out)) if r["level"] == "table"]
    assert len(shift) == 1 and words in shift[0]["incomplete"]
    assert tablectl(["floor", "rounds", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23"]) == 0
    out = capsys.readouterr()
    assert words in out.err and "complete (" not in out.err
    with psycopg.connect(dsn) as conn:
        (tile,) = snapshot(conn)["tables"]
    assert tile["archive"]["complete"] is False and words in tile["archive"]["summary"]
    assert tile["archive"]["out_of_reach_since"] == "2026-11-23 12:05:00 UTC"
    # a window that ended before the table went out of reach rests on everything it covers
    assert tablectl(["floor", "rounds", "--dsn", dsn, "--table", "T1", "--since", "2026-11-23",
                     "--until", "2026-11-23T12:04"]) == 0  # fmt: skip
    assert "complete (" in capsys.readouterr().err
    with psycopg.connect(dsn) as conn:  # heard from again
        conn.execute("UPDATE floor_tables SET last_contact_at = now()")
    row, err = report_row(dsn, capsys)
    assert row["archive"] == "complete" and "out of reach" not in err
