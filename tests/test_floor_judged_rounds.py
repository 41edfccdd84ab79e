"""Judged rounds (issue 44, floor/reports/judged.py): the judging pass stores each settled round's judgement and the
sessions report reads it instead of replaying the round. The report must be the same with or without the pass, a
stored judgement must never be served for a round that changed since (a repair) or that it was not made of, and a
hostile round is refused the same way either way. Rounds dealt on the real table core by simulated players
(tests/test_floor_sessions_play.py's), archived into a real PostgreSQL."""

from __future__ import annotations

import json

import psycopg
import pytest

from controller.cli import main as tablectl
from floor.reports import judged, sessions_play
from floor.reports.sessions_play import judge_table, load_sessions
from tablebench.ap_players import simulate
from tablebench.table_testing import Harness
from tests.support.ap_table import deal_on_table
from tests.support.floor import migrated_database
from tests.test_floor_queries import WHEN, archive_harness

SINCE, UNTIL = WHEN.replace(hour=0), WHEN.replace(hour=23)
WINDOW = ["--since", SINCE.isoformat(), "--until", UNTIL.isoformat()]


@pytest.fixture(scope="module")
def archived():
    """A shoe of a poor player (decisions away from basic strategy: costs) at one table, a counter's at another."""
    with migrated_database() as dsn:
        for table, kind, seed, player in (("T1", "poor", 2, "subject"), ("T2", "counter", 4, None)):
            h = Harness()
            deal_on_table(h, simulate(kind, shoes=1, seed=seed, player=player))
            archive_harness(dsn, h, table=table)
        yield dsn


@pytest.fixture
def dsn(archived):
    yield archived
    with psycopg.connect(archived) as conn:
        conn.execute("DELETE FROM judged_rounds")


def report(dsn: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[str, str]:
    capsys.readouterr()
    assert tablectl(["floor", "sessions", "--dsn", dsn, *WINDOW, *extra]) == 0
    got = capsys.readouterr()
    return got.out, got.err


def judge_pass(dsn: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert tablectl(["floor", "judge", "--dsn", dsn, *WINDOW]) == 0
    return capsys.readouterr().out.splitlines()[-1]


def no_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("a round was replayed: its stored judgement was not used")

    monkeypatch.setattr(sessions_play, "seat_rounds", refuse)


def test_the_report_is_the_same_from_stored_judgements_and_replays_nothing(dsn, capsys, monkeypatch):
    before_csv, before_err = report(dsn, capsys, "--csv")
    with psycopg.connect(dsn) as conn:
        tables_before = {t: judge_table(conn, "S1", t, SINCE, UNTIL) for t in ("T1", "T2")}
    first = judge_pass(dsn, capsys)
    assert first.startswith("judged ") and " 0 judged already" in first and "2 table(s)" in first
    n = int(first.split()[1])
    assert n == sum(len(t.rounds) for t in tables_before.values()) > 40
    assert judge_pass(dsn, capsys).startswith(
        f"judged 0 round(s) (0 stale), {n} judged already"
    )  # idempotent
    no_replay(monkeypatch)
    after_csv, after_err = report(dsn, capsys, "--csv")
    assert (after_csv, after_err) == (before_csv, before_err)
    assert after_csv.count("\nseat,") >= 4  # both tables' seat sessions, from the stored rows
    with psycopg.connect(dsn) as conn:
        for t, old in tables_before.items():
            new = judge_table(conn, "S1", t, SINCE, UNTIL)
            # every figure exact: bets, stakes, results, each decision's move, best move and cost (floats as well)
            assert new.rounds == old.rounds and new.problems == old.problems
        checks = [c for r in tables_before["T1"].rounds for s in r.seats for c in s.checks]
        assert any(c.cost > 0 for c in checks)  # the poor player's costs went through the store
        rep = load_sessions(conn, SINCE, UNTIL)
    assert rep.problems == []


def _card_event(conn: psycopg.Connection, table: str, nth: int) -> tuple[int, dict]:
    """The table's ``nth`` card event (id, data)."""
    rows = conn.execute(
        "SELECT event_id, data FROM events WHERE table_id = %s AND topic = 'events/card' ORDER BY event_id",
        (table,),
    ).fetchall()
    return rows[nth]


def test_a_round_changed_since_it_was_judged_is_judged_again_never_served_stale(dsn, capsys, monkeypatch):
    judge_pass(dsn, capsys)
    with psycopg.connect(dsn) as conn:
        # a stored judgement made of another version of the round (as if the round was repaired since): a card
        # the archive now holds differently; the stored row still says what the old round was
        event_id, data = _card_event(conn, "T1", 40)
        assert isinstance(data.get("code"), str) and not data.get("hidden")
        data["code"] = "2S" if data["code"] != "2S" else "3S"
        conn.execute("UPDATE events SET data = %s WHERE table_id = 'T1' AND event_id = %s",
                     (json.dumps(data), event_id))  # fmt: skip
    calls: list[str] = []
    real = sessions_play.seat_rounds

    def counted(desc, **kw):
        calls.append(kw["round_id"])
        return real(desc, **kw)

    monkeypatch.setattr(sessions_play, "seat_rounds", counted)
    with psycopg.connect(dsn) as conn:
        fresh = judge_table(conn, "S1", "T1", SINCE, UNTIL)
        assert len(calls) == 1  # the changed round alone judged again, by the reader
        conn.execute("DELETE FROM judged_rounds")
        replayed = judge_table(conn, "S1", "T1", SINCE, UNTIL)  # no stored rows at all: the old computation
        conn.rollback()  # the stored rows back
    assert fresh.rounds == replayed.rounds and fresh.problems == replayed.problems
    line = judge_pass(dsn, capsys)
    assert line.startswith("judged 1 round(s) (1 stale)")
    # a row whose judgement was altered but whose digest is not this round's (any other round's, or forged) is
    # not served either; a row in a form this code does not read is judged again, not an error
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT first_event, digest FROM judged_rounds WHERE table_id = 'T1' ORDER BY first_event"
        ).fetchall()
        (_a, da), (b, _db), (c, _dc) = rows[3], rows[4], rows[5]
        conn.execute(
            "UPDATE judged_rounds SET digest = %s WHERE table_id = 'T1' AND first_event = %s", (da, b)
        )
        conn.execute(
            "UPDATE judged_rounds SET judgement = '{\"seats\": [[1]]}' WHERE table_id = 'T1' AND first_event = %s",
            (c,),
        )
    calls.clear()
    with psycopg.connect(dsn) as conn:
        again = judge_table(conn, "S1", "T1", SINCE, UNTIL)
    assert again.rounds == replayed.rounds and len(calls) == 2


def test_a_hostile_round_is_refused_the_same_with_the_pass(dsn, capsys, monkeypatch):
    with psycopg.connect(dsn) as conn:
        event_id, data = _card_event(conn, "T2", 12)
        original = dict(data)
        data["code"] = "ZZ"  # not a card: the round cannot be replayed (docs/rounds.md)
        conn.execute("UPDATE events SET data = %s WHERE table_id = 'T2' AND event_id = %s",
                     (json.dumps(data), event_id))  # fmt: skip
    try:
        before_csv, before_err = report(dsn, capsys, "--csv")
        assert "not replayable" in before_err and "'ZZ'" in before_err
        judge_pass(dsn, capsys)
        with psycopg.connect(dsn) as conn:
            kept = [j for (j,) in conn.execute("SELECT judgement FROM judged_rounds WHERE table_id = 'T2'")]
        refused = [j for j in kept if j["problems"]]
        assert (
            len(refused) == 1 and refused[0]["seats"] == [] and "not replayable" in refused[0]["problems"][0]
        )
        no_replay(monkeypatch)
        assert report(dsn, capsys, "--csv") == (before_csv, before_err)
    finally:
        with psycopg.connect(dsn) as conn:
            conn.execute("UPDATE events SET data = %s WHERE table_id = 'T2' AND event_id = %s",
                         (json.dumps(original), event_id))  # fmt: skip


def test_the_digest_names_the_round_and_the_judging_code(dsn, monkeypatch):
    with psycopg.connect(dsn) as conn:
        t = judge_table(conn, "S1", "T1", SINCE, UNTIL)
    rnd = t.archived[0]
    d = judged.digest(rnd)
    assert len(d) == 64 and d == judged.digest(rnd) and len(judged.judge_code()) == 64
    assert judged.digest(type(rnd)(**{**rnd.__dict__, "round_id": rnd.round_id + "x"})) != d
    monkeypatch.setattr(judged, "judge_code", lambda: "0" * 64)
    assert judged.digest(rnd) != d  # other judging code or profiles: every stored judgement is stale
