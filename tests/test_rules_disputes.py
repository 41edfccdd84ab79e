"""Disputes (PT-2001 r.62 "As reclamações ... só serão atendíveis desde que apresentadas antes de as cartas serem
introduzidas no baralhador"): `tablectl replay --report / --html`, and a journal export replayed as it is."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from controller.journal.store import Journal
from controller.shell import TableController
from controller.table import inputs
from drivers import events as ev

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples" / "rounds"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'


def tablectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_report_tells_each_card_decision_result_and_dealer_error() -> None:
    """PT-2001 r.18 example: the held card, where it finally went, the dealer's draw (r.19), pushes."""
    res = tablectl("replay", str(EXAMPLES / "pt-2001-r18-unseen-card.json"), "--report")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "dealer's hole card, face down (PT-2001 r.17)" in out
    # in an inspector's words (issues 30, 42): cards as on the table, a seat that never split as "Seat 1",
    # amounts as money
    assert re.search(r"8\s+4♥\s+held back\s+held \(PT-2001 r\.18\): 4♥ given to Seat 1\b", out)
    assert re.search(r"4♥\s+Seat 2\s", out) and "hand 1" not in out  # the held card's final place
    assert "dealer draws on 16: 16 or less must draw (PT-2001 r.19)" in out
    assert re.search(r"Dealer's hand\n.*\n\s+7♦ 9♣ 5♣\s+21", out)
    assert re.search(r"Seat 1\s+5♠ 6♥ 10♣\s+21\s+10\.00\s+push\s+0\.00", out)
    assert "PT-2001 r.18  4♥" in out and "total  0.00" in out


def test_report_of_side_bets_prizes_insurance_and_jackpot(tmp_path: Path) -> None:
    doc = {
        "profile": "pt-2001",
        "bets": [{"seat": 1, "amount": 1000, "jackpot_chip": True}],
        "cards": ["AS", "AH", "AS", "KC"],
        "decisions": [{"seat": 1, "action": "insurance", "amount": 500}, {"seat": 1, "action": "split"}],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    res = tablectl("replay", str(path), "--report")
    assert res.returncode == 1  # the split aces need their cards: the round is incomplete
    assert "INVALID round, refused: round incomplete" in res.stdout
    doc["cards"] += ["9D", "8C"]
    path.write_text(json.dumps(doc))
    res = tablectl("replay", str(path), "--report")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "r.43d: first two cards aces of one suit, 100 x the jackpot bet" in res.stdout  # AS AS
    assert re.search(r"Insurance\n.*\n\s+1\s+5\.00\s+yes\s+\+10\.00", res.stdout)


def test_html_page_shows_every_hostile_string_as_text(tmp_path: Path) -> None:
    """Every string field of the file carries markup; the page must show it, never run or parse it."""
    doc = {
        "comment": HOSTILE,
        "profile": "pt-2001",
        "bets": [{"seat": 1, "amount": 1000}, {"seat": 1, "amount": 500, "player": HOSTILE}],
        "cards": ["TS", "TH", "9D", "7C"],
        "decisions": [{"seat": 1, "action": "stand"}],
        "journal": {"round_id": HOSTILE, "session_id": HOSTILE, "settlement": {"total_net": HOSTILE}},
        "expect": {"x": HOSTILE},
    }
    bad_profile = {"profile": HOSTILE, "bets": [{"seat": 1, "amount": 1000, "player": HOSTILE}], "cards": []}
    bad_side_bet = {"profile": "pt-2001", "bets": [{"seat": 1, "amount": 1000, "side_bets": {HOSTILE: 5}}],
                    "cards": []}  # fmt: skip
    bad_card = {"profile": "pt-2001", "bets": [{"seat": 1, "amount": 1000}], "cards": [HOSTILE]}
    lines = "\n".join(json.dumps(d) for d in (doc, bad_profile, bad_side_bet, bad_card))
    page = tmp_path / "report.html"
    res = tablectl("replay", "-", "--html", str(page), stdin=lines)
    assert res.returncode == 1  # three invalid rounds, one that disagrees with its "journal"
    text = page.read_text()
    assert "<script" not in text.lower() and "<img" not in text.lower()  # only as text: &lt;img ...
    assert text.count("&lt;script&gt;") >= 4  # the player, the journal ids, the refusals quote the strings
    tags = set(re.findall(r"</?([a-zA-Z0-9]+)", text))
    assert tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "section", "p", "table", "tr",
                    "th", "td", "span"}, tags  # fmt: skip
    assert 'class="card red"' in text and "\u2665" in text  # card pictures: TH in red with the heart


def _journal_session(path: Path) -> None:
    """A real table (PT-2001, continuous shuffler) plays three rounds into a journal."""
    import asyncio

    async def run() -> None:
        journal = Journal(path, table_id="T1")
        tc = TableController(journal, None)
        await tc.start()
        seq = iter(range(1, 10_000))

        async def card(code: str) -> None:
            await tc.submit(inputs.DeviceInput(ev.CardOut(code[0], code[1], next(seq))))

        async def dev(e: ev.DeviceEvent) -> None:
            await tc.submit(inputs.DeviceInput(e))

        await tc.supervisor_action("ana", "open_table", {"profile": "pt-2001"})
        for e in (ev.LidChanged(ev.LidState.OPEN), ev.DiscardInserted(156), ev.DiscardInserted(156)):
            await dev(e)
        await dev(ev.LidChanged(ev.LidState.CLOSED))
        await dev(ev.ShuffleFinished(312))
        hands = [["2C", "TS", "6D", "7S", "8C"], ["9H", "AD", "7D", "QC"], ["TS", "TH", "9H", "7D"]]
        for n, cards in enumerate(hands):
            await tc.dealer_input("place_bet", {"seat": 2, "amount": 500 * (n + 1)})
            await tc.dealer_input("no_more_bets")
            for code in cards:
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
        journal.close()

    asyncio.run(run())


def test_journal_export_replays_as_it_is_and_agrees(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    _journal_session(db)
    pipe = subprocess.run(
        f"{sys.executable} -m controller.cli journal export --db {db} "
        f"| {sys.executable} -m controller.cli replay --json -",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pipe.returncode == 0, pipe.stderr
    rows = [json.loads(line) for line in pipe.stdout.splitlines()]
    assert [r["agrees"] for r in rows] == [True, True, True] and all(r["round_id"] for r in rows)
    assert "3 rounds: 3 settled, 0 invalid, 0 disagree with the journal" in pipe.stderr


def test_a_tampered_journal_settlement_is_found_by_the_replay(tmp_path: Path) -> None:
    """An insider with the database changes the second round's recorded result: the replay disagrees."""
    db = tmp_path / "journal.db"
    _journal_session(db)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER records_no_update")
    rows = conn.execute("SELECT seq, data FROM records WHERE kind = 'round_final' ORDER BY seq").fetchall()
    seq, data = rows[1]
    doc = json.loads(data)
    doc["settlement"]["total_net"] += 100000
    conn.execute("UPDATE records SET data = ? WHERE seq = ?", (json.dumps(doc), seq))
    conn.commit()
    conn.close()
    export = tablectl("journal", "export", "--db", str(db))
    assert export.returncode == 0, export.stderr
    res = tablectl("replay", "-", "--report", stdin=export.stdout)
    assert res.returncode == 1
    assert res.stdout.count("agrees with the journal's settlement") == 2
    assert "DISAGREES with the journal's settlement: total net for the players: journal +" in res.stdout
    assert "total_net" not in res.stdout  # in words (issue 30)


def test_the_hostile_page_in_a_real_browser_has_no_script_and_shows_the_text(tmp_path: Path) -> None:
    """Debian's headless chromium parses the page: no element came from the file's strings."""
    import shutil

    import pytest

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("chromium is not installed")
    doc = {"comment": HOSTILE, "profile": "pt-2001", "cards": ["TS", "TH", "9D", "7C"],
           "bets": [{"seat": 1, "amount": 1000}, {"seat": 1, "amount": 500, "player": HOSTILE}]}  # fmt: skip
    src, page = tmp_path / "r.json", tmp_path / "r.html"
    src.write_text(json.dumps(doc))
    assert tablectl("replay", str(src), "--html", str(page)).returncode == 0
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "<td>" in dom and "<script" not in dom.lower() and "<img" not in dom.lower()
    assert dom.count("&lt;script&gt;alert(") >= 2  # the comment and the player, as text
