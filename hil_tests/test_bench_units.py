"""Unit tests of the bench's own parts: bench files, the emulator additions (start_empty, dealt), the
reconciliation's checks on made-up data. No processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablebench.bench.config import BenchError, load_bench, parse_bench
from tablebench.bench.reconcile import Reconciliation, check_events
from tablebench.emulator.model import ShoeModel
from tablebench.emulator.scenario import ScenarioError, parse_scenario

BENCHES = Path(__file__).parent / "benches"


def test_shipped_bench_files_parse() -> None:
    emu = load_bench(BENCHES / "emulated.toml")
    assert emu.emulated_shoe and emu.fake_gpio and emu.scenario["start_empty"] is True
    real = load_bench(BENCHES / "real-pi.example.toml")
    assert not real.emulated_shoe and real.broker == "external" and real.shoe_port.startswith("/dev/")


@pytest.mark.parametrize(
    ("doc", "names"),
    [
        ({"shoe": {"kind": "usb"}}, "[shoe] kind = 'usb'"),
        ({"shoe": {"kind": "serial"}}, "needs port"),
        ({"gpoi": {}}, "unknown section [gpoi]"),
        ({"broker": {"prot": 1}}, "unknown key(s) ['prot']"),
        ({"broker": {"port": "1883"}}, "[broker] port"),
        ({"shoe": {"scenario": {"decks": 9}}}, "decks"),
    ],
)
def test_bad_bench_file_names_the_key(doc: dict, names: str) -> None:
    with pytest.raises(BenchError, match=None) as err:
        parse_bench(doc, "x.toml")
    assert names in str(err.value) and "x.toml" in str(err.value)


def test_missing_bench_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="cannot read bench file"):
        load_bench(tmp_path / "nope.toml")


def test_start_empty_machine_holds_nothing_until_loaded_pt2001_r53() -> None:
    m = ShoeModel(parse_scenario({"decks": 2, "start_empty": True, "seed": 4}))
    assert m.cards_inside == 0 and len(m.out) == 104
    m.open_lid()
    m.insert(count=52)
    m.insert()
    assert m.cards_inside == 104 and m.out == []
    m.close_lid()
    m.finish_shuffle(m.shuffle_token)
    m.queue(["AS"])
    out = m.draw(2)
    assert out.drawn == 2 and m.dealt[0]["code"] == "AS" and [d["n"] for d in m.dealt] == [1, 2]


@pytest.mark.parametrize(
    ("doc", "names"),
    [
        ({"start_empty": "yes"}, "start_empty"),
        ({"start_empty": True, "kind": "batch"}, "continuous"),
        ({"start_empty": True, "order": ["AS"]}, "order"),
    ],
)
def test_start_empty_bad_combinations_are_scenario_errors(doc: dict, names: str) -> None:
    with pytest.raises(ScenarioError, match=names):
        parse_scenario(doc)


def test_dealt_records_unreadable_and_face_up_cards() -> None:
    m = ShoeModel(parse_scenario({"order": ["2C", "3C"]}))
    m.next_unreadable = True
    m.draw(1)
    m.next_face_up = True
    m.draw(1)
    assert m.dealt == [
        {"n": 1, "shoe_seq": 1, "code": "2C", "unreadable": True},
        {"n": 2, "shoe_seq": 2, "code": "3C", "face_up": True},
    ]


def test_event_check_finds_gaps_duplicates_and_order(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "j.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE outbox (event_id INTEGER PRIMARY KEY AUTOINCREMENT, x)")
    conn.executemany("INSERT INTO outbox (x) VALUES (?)", [(i,) for i in range(6)])
    conn.execute("DELETE FROM outbox")
    conn.commit()
    conn.close()
    rep = Reconciliation()
    check_events(db, [1, 2, 4, 3, 6], received=7, rep=rep)
    assert rep.events_committed == 6 and rep.gaps == [5] and rep.duplicates == 2 and rep.out_of_order == 1


def test_cli_show_and_bad_bench_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "controller.cli", "bench"]
    shown = subprocess.run([*cmd, "show"], capture_output=True, text=True, check=False)
    assert shown.returncode == 0 and "emulated_shoe" not in shown.stdout and "start_empty" in shown.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[shoe]\nkind = "usb"\n')
    out = subprocess.run([*cmd, "soak", "--bench", str(bad)], capture_output=True, text=True, check=False)
    assert out.returncode == 2 and "kind = 'usb'" in out.stdout
