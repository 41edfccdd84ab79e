"""Several players on one seat (PT-2001 r.15-16, r.28, r.30; MO-2004 art.20) through `tablectl replay`.

The first bet listed for a seat is its titular's, who decides the play ("Os jogadores que fizerem estas apostas
complementares ficam sujeitos à decisão que for tomada pelo titular do lugar", r.15); the others name a `player`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from controller.cli.replay import main as replay_main
from controller.rules.rounds import replay

TITULAR_AND_BOB = [{"seat": 1, "amount": 1000}, {"seat": 1, "amount": 500, "player": "bob"}]


def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> tuple[int, dict]:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    rc = replay_main(argparse.Namespace(round=str(path), json=True, pretty=False, report=False, html=None))
    return rc, json.loads(capsys.readouterr().out)


def D(action: str, hand: int = 0, **kw: Any) -> dict:
    return {"seat": 1, "hand": hand, "action": action, **kw}


def co(out: dict) -> list[tuple[str, int, str, int]]:
    return [(c["player"], c["hand"], c["outcome"], c["net"]) for c in out["settlement"]["co_bets"]]


def test_pt2001_r15_a_complementary_bet_follows_the_titulars_hand(tmp_path, capsys) -> None:
    """T+9 = 19 against T+7: the titular's 1000 and bob's 500 both win 1:1."""
    rc, out = cli(tmp_path, capsys, {"profile": "pt-2001", "bets": TITULAR_AND_BOB,
                                     "cards": ["TS", "TH", "9D", "7C"], "decisions": [D("stand")]})  # fmt: skip
    assert rc == 0 and co(out) == [("bob", 0, "win", 500)]
    assert out["settlement"]["total_net"] == 1500 == out["settlement"]["seat_nets"]["1"]


SPLIT = ["8S", "TH", "8D", "7C", "TD", "2C", "5C"]  # 8-8 split: 18 and 8+2+5 = 15 against 17


def test_pt2001_r28_not_following_the_split_is_decided_by_the_first_hand(tmp_path, capsys) -> None:
    """r.28 "Se o não acompanharem no desdobramento, as suas apostas serão decididas pelo resultado alcançado
    para a primeira das duas apostas do titular do lugar": bob wins with the 18 although the 15 loses."""
    doc = {"profile": "pt-2001", "bets": TITULAR_AND_BOB, "cards": SPLIT,
           "decisions": [D("split"), D("stand", 0), D("hit", 1), D("stand", 1)]}  # fmt: skip
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 0 and co(out) == [("bob", 0, "win", 500)] and out["settlement"]["total_net"] == 500


def test_pt2001_r28_following_the_split_adds_an_equal_bet_on_the_second_hand(tmp_path, capsys) -> None:
    """r.28 "fazer também ... aposta igual à primeira e anexá-la à segunda aposta do titular"."""
    doc = {"profile": "pt-2001", "bets": TITULAR_AND_BOB, "cards": SPLIT,
           "decisions": [D("split"), D("split", player="bob"), D("stand", 0), D("hit", 1), D("stand", 1)]}  # fmt: skip
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 0 and co(out) == [("bob", 0, "win", 500), ("bob", 1, "lose", -500)]
    assert out["settlement"]["total_net"] == 0


def test_pt2001_r30_the_complementary_bettor_may_double_too(tmp_path, capsys) -> None:
    """r.30: 5+6 doubled draws T (21) against T+7: the titular wins 2000, bob doubled his 500 and wins 1000."""
    doc = {"profile": "pt-2001", "bets": TITULAR_AND_BOB, "cards": ["5S", "TH", "6D", "7C", "TD"],
           "decisions": [D("double"), D("double", player="bob")]}  # fmt: skip
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 0 and co(out) == [("bob", 0, "win", 1000)] and out["settlement"]["total_net"] == 3000


def test_pt2001_r15_insurance_is_each_players_own_choice(tmp_path, capsys) -> None:
    """r.15 "os donos das apostas complementares são livres de o fazer, ou não": bob insures 250 (2:1 = 500)."""
    doc = {"profile": "pt-2001", "bets": TITULAR_AND_BOB, "cards": ["TS", "AH", "9D", "KC"],
           "decisions": [D("no_insurance"), D("insurance", player="bob", amount=250), D("stand")]}  # fmt: skip
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 0 and out["settlement"]["total_net"] == -1000 - 500 + 500


@pytest.mark.parametrize(
    ("profile", "bets", "needle", "rule"),
    [
        # r.15: "não atinja ainda o máximo aprovado para essa banca": 10000 + 5500 > 15000.
        ("pt-2001", [{"seat": 1, "amount": 10000}, {"seat": 1, "amount": 5500, "player": "bob"}], "15500",
         "PT-2001 r.15"),
        # r.16: "de valor igual ou múltiplo do mínimo".
        ("pt-2001", [{"seat": 1, "amount": 1000}, {"seat": 1, "amount": 750, "player": "bob"}], "750",
         "PT-2001 r.14"),
        # MO-2004 art.20.1.2: "no máximo três jogadores".
        ("mo-2004", [{"seat": 1, "amount": 10000}] + [{"seat": 1, "amount": 10000, "player": f"p{i}"}
                                                      for i in range(3)], "at most 3", "MO-2004 art.20"),
        ("pt-2001", [{"seat": 1, "amount": 1000}, {"seat": 1, "amount": 500}], "different `player`",
         "PT-2001 r.15"),
        ("it-online", TITULAR_AND_BOB, "one player per seat", "IT"),
    ],
)  # fmt: skip
def test_shared_seat_limits(tmp_path, capsys, profile: str, bets: list, needle: str, rule: str) -> None:
    rc, out = cli(tmp_path, capsys, {"profile": profile, "bets": bets, "cards": []})
    assert rc == 1 and needle in out["error"] and out["rule"] == rule, out


def test_a_co_bettor_cannot_take_the_titulars_decisions(tmp_path, capsys) -> None:
    doc = {"profile": "pt-2001", "bets": TITULAR_AND_BOB, "cards": ["TS", "TH", "6D", "7C", "2C"],
           "decisions": [D("hit", player="bob")]}  # fmt: skip
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 1 and out["rule"] == "PT-2001 r.15" and "titular decides" in out["error"]


def test_shared_seat_rounds_replay_from_their_description() -> None:
    doc = {"profile": "pt-2001", "bets": TITULAR_AND_BOB, "cards": SPLIT,
           "decisions": [D("split"), D("split", player="bob"), D("stand", 0), D("hit", 1), D("stand", 1)]}  # fmt: skip
    first = replay(doc)
    assert replay(first.engine.description()).settlement == first.settlement
