"""Where the engine disagreed with the books (issue 28), each through `tablectl replay` with the shipped profiles:
the IT and RO dealer completes his hand, burns counted whichever way a round writes them, the book's bound on the
maximum bet, and a second player's jackpot chip judged (PT-2001 r.45-47 with r.15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.rules.profiles import PROFILE_DIR, ProfileError, load_profile
from tests.test_rules_books import R, ok, refused

# ------------------------------------------------------------------ IT and RO: the dealer completes his hand


def test_it_the_bank_draws_below_17_after_the_only_player_busts(tmp_path, capsys) -> None:
    """IT "il banco deve tirare se ha un punteggio inferiore a 17 ... seguendo rigidamente la seguente regola" and
    "perde la puntata indipendentemente dal punteggio che farà il banco": no hole card (the bank's second card
    after the players); the only position busts on 15 + 9; the bank still takes T (16) and 5 (21). Both cards
    are his hand's, no dealer error (before: "after the round ended", refused)."""
    doc = R("it-online", [(1, 1000)], ["TH", "6S", "5D", "9C", "TC", "5C"], [(1, "hit")])
    out = ok(tmp_path, capsys, doc)
    s = out["settlement"]
    assert s["dealer_cards"] == ["6S", "TC", "5C"] and s["dealer_total"] == 21
    assert [(h["outcome"], h["net"]) for h in s["hands"]] == [("bust", -1000)]
    assert s["dealer_errors"] == []


def test_ro_the_dealer_finishes_his_hand_after_a_lone_blackjack_against_a_ten(tmp_path, capsys) -> None:
    """RO "Crupierul trebuie să tragă carte la 16" and "Când mâna crupierului este terminată, runda jocului este
    finalizată": the only box has A-K against T up; the dealer checks (no blackjack, T-6), plays his 16 and draws
    5. The blackjack is paid 3:2; the 5 is a normal card of his hand, not a dealer error."""
    doc = R("ro-online", [(1, 1000)], ["AH", "TS", "KD", "6C", "5H"])
    out = ok(tmp_path, capsys, doc)
    s = out["settlement"]
    assert s["dealer_cards"] == ["TS", "6C", "5H"] and s["dealer_total"] == 21
    assert [(h["outcome"], h["net"]) for h in s["hands"]] == [("blackjack", 1500)]
    assert s["dealer_errors"] == []


def test_pt2001_r22_still_stops_the_dealer_when_every_player_has_bust(tmp_path, capsys) -> None:
    """PT-2001 r.22 ("não deve tirar cartas, para além das duas iniciais, quando todos os jogadores já tenham
    perdido ou desistido"): a third dealer card marked as his is a dealer error citing r.22, not counted."""
    doc = R(
        "pt-2001", [(1, 1000)], ["TH", "6S", "5D", "TD", "9C", {"card": "5C", "to": "dealer"}], [(1, "hit")]
    )
    out = ok(tmp_path, capsys, doc)
    s = out["settlement"]
    assert s["dealer_cards"] == ["6S", "TD"]
    assert [e["rule"] for e in s["dealer_errors"]] == [load_profile("pt-2001").cite("nobody_in_play")]


# ------------------------------------------------------------------ burns, however the round writes them


@pytest.mark.parametrize(
    ("profile", "burns", "rule"),
    [("pt-2001", 2, "PT-2001 r.10"), ("mo-2004", 2, "MO-2004 art.4"), ("it-online", 1, "IT")],
)
def test_a_burn_count_the_book_does_not_allow_is_invalid_when_written_as_leading_cards(
    tmp_path, capsys, profile: str, burns: int, rule: str
) -> None:
    """PT-2001 r.10 "será retirada uma do sabot" (one), MO-2004 art.4.1 "tantas cartas quantos os baralhos em
    uso, ou apenas a primeira carta" (one or six), the online books none: two leading burn cards under PT-2001
    were settled with no refusal and no flag; now the same refusal as ``burn_before_deal: 2``."""
    lead = [{"card": "2C", "to": "burn"}] * burns
    out = refused(
        tmp_path, capsys, R(profile, [(1, load_profile(profile).min_bet)], [*lead, "TH", "6S", "7D", "TD"])
    )
    assert out["rule"].startswith(rule) and f"{burns} card(s)" in out["error"]
    assert out["rule"] == load_profile(profile).cite("burn")


# ------------------------------------------------------------------ bet limits: the book's bound, not the file's


def _profile_file(tmp_path: Path, name: str, **bets: int) -> Path:
    text = (PROFILE_DIR / f"{name}.toml").read_text()
    lines, section = [], ""
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip()
        key = line.split("=")[0].strip()
        if section == "[bets]" and key in bets:
            line = f"{key} = {bets[key]}"
        lines.append(line)
    path = tmp_path / f"{name}-edited.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pt_online_r11_a_profile_cannot_raise_the_multiple_above_100(tmp_path) -> None:
    """PT-ONLINE-2015 r.11 "O valor da aposta máxima não pode exceder 100 vezes o valor da aposta mínima": a file
    with max_multiple = 200 and a 200 x maximum loaded and settled rounds; refused now, citing r.11 (not PT-2001)."""
    path = _profile_file(tmp_path, "pt-online-2015", max_multiple=200, max_bet=20000)
    with pytest.raises(ProfileError, match=r"bets\.max_multiple: 200, but PT-ONLINE-2015 allows 1 to 100 "
                                           r"\(PT-ONLINE-2015 r\.11\)"):  # fmt: skip
        load_profile(path)


def test_pt2001_r37_a_profile_cannot_switch_the_multiple_off(tmp_path) -> None:
    """PT-2001 r.37 "O valor máximo de aposta é igual a 30 vezes o valor mínimo": max_multiple = 0 with a 100 x
    maximum loaded; refused now."""
    path = _profile_file(tmp_path, "pt-2001", max_multiple=0, max_bet=50000)
    with pytest.raises(ProfileError, match=r"PT-2001 r\.37"):
        load_profile(path)
    path = _profile_file(tmp_path, "pt-2001", max_bet=50000)
    with pytest.raises(ProfileError, match=r"bets\.max_bet: 50000 exceeds 30 x min_bet \(PT-2001 r\.37\)"):
        load_profile(path)


def test_pt_online_r9_is_the_rule_against_a_bet_above_the_maximum(tmp_path, capsys) -> None:
    """PT-ONLINE-2015 r.9 "O valor de cada aposta não pode ser inferior ao valor mínimo ... nem superior ao valor
    máximo" is the rule a bet above the maximum breaks; r.11 bounds the maximum itself (it was cited before)."""
    p = load_profile("pt-online-2015")
    out = refused(tmp_path, capsys, R(p.name, [(1, p.max_bet + p.min_bet)], ["TH", "6S", "7D", "TD"]))
    assert out["rule"] == "PT-ONLINE-2015 r.9"


# ------------------------------------------------------------------ PT-2001 r.45-47 with r.15: a second player's chip


def test_pt2001_r45_r47_a_second_players_jackpot_chip_is_judged_on_the_seats_first_cards(
    tmp_path, capsys
) -> None:
    """r.45 "Apenas poderão jogar para o jackpot os jogadores que tenham feito a sua aposta no jogo principal" (a
    complementary bet of r.15 is one), r.47 "uma ficha por cada jogador", r.46 decided "unicamente das primeiras
    duas, três ou quatro cartas do jogador": the co-bettor's chip was accepted and silently dropped at settlement;
    now it is judged, on the seat's first cards, beside the seat holder's (two aces of one suit, r.43: 100 x)."""
    bets = [
        {"seat": 1, "amount": 1000, "jackpot_chip": True},
        {"seat": 1, "amount": 500, "player": "p2", "jackpot_chip": True},
    ]
    out = ok(tmp_path, capsys, R("pt-2001", bets, ["AS", "9D", "AS", "8C"], [(1, "stand")]))
    judged = out["settlement"]["jackpot"]
    assert judged == [
        {"seat": 1, "first_cards": ["AS", "AS"]},
        {"seat": 1, "player": "p2", "first_cards": ["AS", "AS"]},
    ]
