"""A table's own progressive and a linked one on the floor (issue 40): the real table core plays a table on its
own meter and a table on a linked progressive (hits verified and paid, PT-2001 r.49), the archive stores what they
published, and every jackpot figure of the floor is checked against a recomputation from those events: the own
meter's figures count only events without a ``link`` (floor/reports/figures.py JACKPOT_*), the linked ones (LINKED_*)
only those with one, per table, pit and floor (`floor shift`), in the day's report, `floor jackpot`'s CSV and the table
page."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from support.jackpot import BET, CFG, jackpot_messages_valid  # noqa: F401 (fixture)
from support.link_docs import LINK

from controller.cli import main as tablectl
from controller.table.messages import messages
from floor.reports.figures import (
    JACKPOT_CONTRIBUTIONS,
    JACKPOT_HANDLE,
    JACKPOT_PAYOUTS,
    LINKED_CONTRIBUTIONS,
    LINKED_PAID,
)
from floor.web.table_view import table_view
from tablebench.table_testing import Harness
from tests.support.floor import migrated_database
from tests.test_floor_queries import WHEN, archive_harness, synthetic
from tests.test_floor_shift import shift_rows
from tests.test_jackpot_link import award, linked_table, round_with_chips
from tests.test_jackpot_table import deal, finish_round, make_table, pending, start_round

pytestmark = pytest.mark.usefixtures("jackpot_messages_valid")


@pytest.fixture
def dsn():
    with migrated_database() as d:
        yield d


def own_meter_table() -> Harness:
    """Two rounds with jackpot chips on the table's own meter; three aces of spades at seat 1 (PT-2001 r.43b),
    verified and paid (r.49)."""
    h = make_table()
    start_round(h, {1: 500, 3: 500}, chips=[1, 3])
    deal(h, "5C", "AS", "8D", "9S", "AS", "9D", "7D")
    h.dealer("hit")
    deal(h, "AS")
    h.dealer("stand")
    (hit,) = pending(h)
    finish_round(h)
    h.sup("jackpot_verify", hit_id=hit["hit_id"])
    h.sup("jackpot_pay", hit_id=hit["hit_id"])
    start_round(h, {2: 500}, chips=[2])
    finish_round(h)
    return h


def linked_progressive_table() -> Harness:
    """Two rounds with linked chips; a hit at seat 1, the link's prize (its controller's award) verified and
    paid at the table, then a rejected one."""
    h = linked_table()
    rid = round_with_chips(h, [1, 3])
    for code in ("5C", "AH", "8D", "9S", "AS", "9D", "7D"):
        h.card(code)
    h.dealer("stand")
    award(h, rid, 1, hit_id=41, amount=2500)
    h.sup("jackpot_verify", hit_id=41)
    h.sup("jackpot_pay", hit_id=41, amount=2500)
    finish_round(h)
    rid = round_with_chips(h, [1])
    for code in ("AD", "8D", "9S", "AH", "9D", "7D"):  # no burn card after the first round
        h.card(code)
    h.dealer("stand")
    award(h, rid, 1, hit_id=42, amount=2500)
    h.sup("jackpot_verify", hit_id=42, valid=False, reason="card misread by the reader")
    finish_round(h)
    return h


def jackpot_events(h: Harness) -> list[dict[str, Any]]:
    return [m.data for m in messages(h.effects) if m.topic == "events/jackpot"]


def recompute(events: list[dict[str, Any]]) -> dict[str, int]:
    """Each jackpot figure by its definition (floor/reports/figures.py), from the events the table published."""
    own = [e for e in events if "link" not in e]
    linked = [e for e in events if "link" in e]
    handle = contributions = 0
    before = None
    for e in own:
        if "meter" not in e:
            continue
        if e["action"] == "contribution":
            handle += e["chips"] * BET
            contributions += e["meter"] - before if before is not None else 0
        before = e["meter"]
    return {
        JACKPOT_HANDLE.column: handle,
        JACKPOT_CONTRIBUTIONS.column: contributions,
        JACKPOT_PAYOUTS.column: sum(e["amount"] for e in own if e["action"] == "paid"),
        LINKED_CONTRIBUTIONS.column: sum(e["amount_minor"] for e in linked if e["action"] == "contribution"),
        LINKED_PAID.column: sum(e["amount_minor"] for e in linked if e["action"] == "paid"),
    }


def test_own_and_linked_jackpot_figures_each_count_only_their_own_events(dsn, tmp_path, capsys) -> None:
    own, linked = own_meter_table(), linked_progressive_table()
    own_events, linked_events = jackpot_events(own), jackpot_events(linked)
    assert [e["action"] for e in own_events if e["action"] in ("contribution", "paid")] == [
        "contribution", "paid", "contribution"]  # fmt: skip
    assert all("meter" not in e for e in linked_events)  # the link's controller keeps its meter
    assert {e["action"] for e in linked_events} >= {
        "contribution",
        "hit_pending",
        "verified",
        "paid",
        "rejected",
    }
    archive_harness(dsn, own, table="T1")
    n = archive_harness(dsn, linked, table="T2", when=WHEN + timedelta(minutes=10))
    # a linked event carrying a meter (not the table's: the schema does not ask for one) is still the link's
    odd = {"action": "contribution", "link": LINK, "round_id": "x", "seats": [1], "chips": 1, "bet_value": BET,
           "amount_minor": BET, "currency": "EUR", "meter": 999_999}  # fmt: skip
    synthetic(dsn, "T2", [("events/jackpot", "jackpot", odd)], first=n + 1)
    want = {"T1": recompute(own_events), "T2": recompute([*linked_events, odd])}
    assert want["T1"][JACKPOT_HANDLE.column] == 3 * BET and want["T1"][JACKPOT_PAYOUTS.column] == 2500 * BET
    assert want["T2"][LINKED_CONTRIBUTIONS.column] == 4 * BET and want["T2"][LINKED_PAID.column] == 2500

    rows = {(r["level"], r["table"] or r["pit"] or r["level"]): r for r in shift_rows(dsn, tmp_path, capsys)}
    both = {k: want["T1"][k] + want["T2"][k] for k in want["T1"]}
    for key, expect in ((("table", "T1"), want["T1"]), (("table", "T2"), want["T2"]), (("pit", "Pit 1"), both),
                        (("floor", "floor"), both)):  # fmt: skip
        assert {k: int(rows[key][k]) for k in expect} == expect, key
    assert rows[("table", "T2")][JACKPOT_HANDLE.column] == "0"  # nothing of the link's on the own figures

    # the day's report: the own meter's last value; a linked table has none
    assert tablectl(["floor", "report", "--dsn", dsn, "--day", WHEN.date().isoformat()]) == 0
    day = {r["table"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    own_meters = [e["meter"] for e in own_events if "meter" in e]
    assert day["T1"]["jackpot_meter_minor"] == str(own_meters[-1]) and day["T2"]["jackpot_meter_minor"] == ""

    # floor jackpot: the own meter's rows with their meter, the link's with its name, no meter, their amounts
    since, until = WHEN - timedelta(hours=1), WHEN + timedelta(hours=7)
    assert tablectl(["floor", "jackpot", "--dsn", dsn, "--since", since.isoformat(), "--until",
                     until.isoformat()]) == 0  # fmt: skip
    history = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    t1 = [r for r in history if r["table"] == "T1"]
    t2 = [r for r in history if r["table"] == "T2"]
    assert [int(r["meter_minor"]) for r in t1] == own_meters and {r["link"] for r in t1} == {""}
    assert [r["action"] for r in t2] == [e["action"] for e in [*linked_events, odd]]
    assert {r["link"] for r in t2} == {LINK} and {r["meter_minor"] for r in t2} == {""}
    assert [r["amount_minor"] for r in t2] == [str(e.get("amount_minor", "")) for e in [*linked_events, odd]]

    # the table page: the own meter drawn for T1 only; T2 names its link and its linked figures
    with psycopg.connect(dsn) as conn:
        page1 = table_view(conn, "S1", "T1", now=WHEN + timedelta(hours=2))
        page2 = table_view(conn, "S1", "T2", now=WHEN + timedelta(hours=2))
    assert [v for _, v in page1["meter"]["points"]] == own_meters and page1["linked"] is None
    assert page2["meter"]["points"] == []
    cur = CFG["currency"]
    assert page2["linked"] == {
        "link": LINK,
        "figures": [
            {"label": LINKED_CONTRIBUTIONS.label, "value": f"{4 * BET / 100:,.2f} {cur}"},
            {"label": LINKED_PAID.label, "value": f"{2500 / 100:,.2f} {cur}"},
        ],
    }
