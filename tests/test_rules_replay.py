"""`tablectl replay` on the shipped example rounds (real CLI, subprocess) and on invalid rounds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.rules.profiles import list_profiles

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples" / "rounds").glob("*.json"))


def tablectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True, cwd=ROOT, input=stdin
    )


def test_every_profile_has_an_example() -> None:
    covered = {json.loads(p.read_text())["profile"] for p in EXAMPLES}
    assert covered == set(list_profiles())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_replays_to_the_documented_result(path: Path) -> None:
    doc = json.loads(path.read_text())
    proc = tablectl("replay", str(path), "--pretty")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    s, want = out["settlement"], doc["expect"]
    assert out["valid"] is True
    assert s["total_net"] == want["total_net"]
    assert s["seat_nets"] == want["seat_nets"]
    assert s["dealer_cards"] == want["dealer_cards"]
    got = [{k: h[k] for k in ("seat", "hand", "cards", "outcome", "net")} for h in s["hands"]]
    assert got == want["hands"]
    assert [e["rule"] for e in out["dealer_errors"]] == want["dealer_error_rules"]


def _write(tmp_path: Path, doc: dict) -> str:
    p = tmp_path / "round.json"
    p.write_text(json.dumps(doc))
    return str(p)


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        # more cards of a kind than the decks hold (PT-2001 r.3)
        ({"profile": "pt-2001", "bets": [{"seat": 1, "amount": 500}], "cards": ["AS"] * 7}, "more than 6 AS"),
        # a forbidden decision: double on 8 (PT-2001 r.29)
        (
            {
                "profile": "pt-2001",
                "bets": [{"seat": 1, "amount": 500}],
                "cards": ["5S", "9D", "3H", "8C"],
                "decisions": [{"seat": 1, "action": "double"}],
            },
            "PT-2001 r.29",
        ),
        # a card after the round ended
        (
            {
                "profile": "pt-2001",
                "bets": [{"seat": 1, "amount": 500}],
                "cards": ["TS", "7D", "9H", "KC", "5H"],
                "decisions": [{"seat": 1, "action": "stand"}],
            },
            "after the round ended",
        ),
        # unknown seat
        ({"profile": "ro-online", "bets": [{"seat": 4, "amount": 500}], "cards": []}, "unknown seat 4"),
        # schema: a bad card code names its place
        (
            {"profile": "pt-2001", "bets": [{"seat": 1, "amount": 500}], "cards": ["1X"]},
            "card #1 '1X': unknown rank 1",
        ),
        # unknown profile
        ({"profile": "atlantis", "bets": [{"seat": 1, "amount": 500}], "cards": []}, "atlantis"),
    ],
)
def test_invalid_rounds_exit_nonzero_with_a_clear_error(tmp_path: Path, doc: dict, needle: str) -> None:
    proc = tablectl("replay", "--json", _write(tmp_path, doc))
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["valid"] is False and needle in out["error"] + " " + str(out["rule"])
    assert needle in proc.stderr


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{nope")
    assert tablectl("replay", str(bad)).returncode == 2
    assert tablectl("replay", str(tmp_path / "missing.json")).returncode == 2


def test_replay_reads_stdin() -> None:
    doc = json.loads(EXAMPLES[0].read_text())
    proc = tablectl("replay", "--json", "-", stdin=json.dumps(doc))
    assert (
        proc.returncode == 0
        and json.loads(proc.stdout)["settlement"]["total_net"] == doc["expect"]["total_net"]
    )
