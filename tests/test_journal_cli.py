"""`tablectl journal verify` (hash chain: a modified record is named) and `tablectl journal export` (a
session's rounds as JSON lines that `tablectl replay` settles again, PT-2001 r.62)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from controller.journal.store import Journal
from controller.rules.rounds import replay
from controller.shell import TableController
from controller.table import inputs
from drivers import events as ev

ROOT = Path(__file__).resolve().parent.parent


def tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


async def make_journal(path: Path, rounds: int = 2) -> str:
    """A continuous PT-2001 session with ``rounds`` rounds and one voided round; returns the session id."""
    journal = Journal(path, table_id="T1")
    tc = TableController(journal, None)
    await tc.start()
    seq = iter(range(1, 10_000))

    async def card(code: str) -> None:
        await tc.submit(inputs.DeviceInput(ev.CardOut(code[0], code[1], next(seq))))

    async def dev(e: ev.DeviceEvent) -> None:
        await tc.submit(inputs.DeviceInput(e))

    session = (await tc.supervisor_action("ana", "open_table", {"profile": "pt-2001"}))["session_id"]
    await dev(ev.LidChanged(ev.LidState.OPEN))
    await dev(ev.DiscardInserted(156))
    await dev(ev.DiscardInserted(156))
    await dev(ev.LidChanged(ev.LidState.CLOSED))
    await dev(ev.ShuffleFinished(312))
    hands = [["2C", "TS", "6D", "7S", "8C"], ["9H", "AD", "7D", "QC"], ["TS", "TH", "9H", "7D"]]
    for n in range(rounds):
        await tc.dealer_input("place_bet", {"seat": 2, "amount": 500 * (n + 1)})
        await tc.dealer_input("no_more_bets")
        for code in hands[n % len(hands)]:
            await card(code)
        while tc.core.state == "players":
            await tc.dealer_input("stand")
        while tc.core.state == "dealer":
            await card(["5H", "4H", "3C", "2H"][tc.core.round.card_count % 4])
        assert tc.core.state == "settled"
        await dev(ev.LidChanged(ev.LidState.OPEN))
        await dev(ev.DiscardInserted(tc.core.out))
        await dev(ev.LidChanged(ev.LidState.CLOSED))
        await tc.dealer_input("next_round")
    await tc.dealer_input("place_bet", {"seat": 5, "amount": 500})
    await tc.dealer_input("no_more_bets")
    await tc.supervisor_action("rui", "void_round", {"reason": "test"})
    journal.close()
    return session


async def test_verify_ok_then_names_the_modified_record(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    await make_journal(db)
    ok = tablectl("journal", "verify", "--db", str(db))
    assert ok.returncode == 0, ok.stderr
    assert "hash chain intact" in ok.stdout
    # an attacker with the database file: drop the append-only trigger and change a bet
    conn = sqlite3.connect(db)
    seq = conn.execute("SELECT seq FROM records WHERE kind = 'bet_placed' ORDER BY seq LIMIT 1").fetchone()[0]
    conn.execute("DROP TRIGGER records_no_update")
    conn.execute("UPDATE records SET data = replace(data, '500', '5000') WHERE seq = ?", (seq,))
    conn.commit()
    conn.close()
    bad = tablectl("journal", "verify", "--db", str(db))
    assert bad.returncode == 1
    assert f"record {seq}" in bad.stderr and "modified" in bad.stderr


async def test_verify_names_a_deleted_record(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    await make_journal(db, rounds=1)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER records_no_delete")
    conn.execute("DELETE FROM records WHERE seq = 7")
    conn.commit()
    conn.close()
    bad = tablectl("journal", "verify", "--db", str(db))
    assert bad.returncode == 1 and "record 7" in bad.stderr


async def test_export_writes_replayable_rounds_and_skips_void_ones_pt2001_r62(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    session = await make_journal(db, rounds=3)
    out = tmp_path / "rounds.jsonl"
    res = tablectl("journal", "export", "--db", str(db), "--session", session, "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "exported 3 rounds; 1 void round skipped" in res.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    bets = []
    for line in lines:
        doc = json.loads(line)
        result = replay(doc).to_json()
        assert result["valid"] is True
        bets.append(doc["bets"][0]["amount"])
    assert bets == [500, 1000, 1500]
    # the replay CLI settles an exported line too
    (tmp_path / "one.json").write_text(lines[0])
    rep = tablectl("replay", "--json", str(tmp_path / "one.json"))
    assert rep.returncode == 0, rep.stderr
    # default session is the latest one; stdout when no --out
    res = tablectl("journal", "export", "--db", str(db))
    assert res.stdout.splitlines() == lines


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["journal", "verify", "--db", "{tmp}/missing.db"], 2, "no such file"),
        (["journal", "export", "--db", "{db}", "--session", "nope"], 1, "no rounds for session 'nope'"),
    ],
)
async def test_bad_arguments_give_a_clear_error(
    tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    db = tmp_path / "journal.db"
    await make_journal(db, rounds=1)
    res = tablectl(*[a.format(tmp=tmp_path, db=db) for a in args])
    assert res.returncode == code
    assert message in res.stderr
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "an empty file, not a table journal"),
        (b"this is a text file, not a database\n", "not an SQLite database"),
        (None, "an SQLite database without a journal"),  # a valid SQLite file of something else
    ],
)
def test_verify_refuses_what_is_not_a_journal_and_leaves_it_untouched(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    """An inspection tool never creates or converts a file: a clean refusal (exit 2), no traceback."""
    target = tmp_path / "other.db"
    if content is None:
        conn = sqlite3.connect(target)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
    else:
        target.write_bytes(content)
    before = target.read_bytes()
    for action in ("verify", "export"):
        res = tablectl("journal", action, "--db", str(target))
        assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr
    assert target.read_bytes() == before
