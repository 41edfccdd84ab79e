"""Issue 42: the pit terminal's words and its "next:" line, on documents as the table publishes them (pure: no
broker, no screen). A card only when one is due (never past a decision or the dealer's stand, PT-2001 r.19; never
while a damaged card awaits its replacement, r.51); a bet hinted only within the table's limits (r.37); the
hand, dealer and selection lines in the dealer's words."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from controller.terminal.pit_connection import PitConnection
from controller.terminal.pit_keys import DEALER_KEYS, hint_keys
from controller.terminal.pit_layout import legend
from controller.terminal.pit_panels import deck_check_text, decks_text, entry_line, round_panel
from controller.terminal.pit_rules import game_name, profile_of_game, shown_inputs
from controller.terminal.pit_summary import settled_summary
from controller.terminal.pit_supervisor import (
    SupervisorArgumentError,
    card_code,
    supervisor_call,
    supervisor_default,
)
from controller.terminal.view import card_refusal, hand_text, next_hint, settlement_lines

KEYS = hint_keys()


def text_of(renderable: Any, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def hand(seat: int, cards: list[str], total: int, **kw: Any) -> dict[str, Any]:
    h = {"hand": kw.pop("hand", 0), "cards": cards, "total": total, "soft": False, "blackjack": False,
         "stake": 1000, "doubled": False, "status": "open"}  # fmt: skip
    return h | kw


def test_a_seat_that_never_split_is_just_its_seat_when_another_seat_split() -> None:
    rnd = {"round_id": "S-1", "phase": "players", "turn": {"kind": "player", "seat": 4, "hand": 0},
           "seats": [{"seat": 2, "bet": 1000, "hands": [hand(2, ["8S", "3D"], 11), hand(2, ["8H"], 8, hand=1)]},
                     {"seat": 4, "bet": 1000, "hands": [hand(4, ["9S", "7D"], 16)]}],
           "dealer": {"cards": ["6H", "??"], "total": 6}}  # fmt: skip
    shown = text_of(round_panel({"state": "players"}, rnd, {}, enabled={"hit"}, keys={"hit": "h"}))
    assert "turn: Seat 4 " in shown and "Seat 4, hand 1" not in shown
    assert "Seat 2, hand 1" in shown and "Seat 2, hand 2" in shown
    rnd["turn"] = {"kind": "player", "seat": 2, "hand": 1}
    shown = text_of(round_panel({"state": "players"}, rnd, {}, enabled={"hit"}, keys={"hit": "h"}))
    assert "turn: Seat 2, hand 2 " in shown


def test_soft_totals_are_said_for_the_dealer_too_and_a_face_down_card_shows_no_total() -> None:
    assert hand_text(hand(1, ["AS", "6H"], 17, soft=True)) == "A♠ 6♥ = soft 17"
    assert hand_text(hand(1, ["AS", "KH"], 21, soft=True, blackjack=True)) == "A♠ K♥ = 21 (blackjack)"
    rnd = {"round_id": "S-1", "phase": "complete", "seats": [{"seat": 1, "bet": 1000, "hands": [
        hand(1, ["9S", "2D", "KH"], 21, doubled=True, stake=2000, status="stood")]}],
        "dealer": {"cards": ["AH", "6C"], "total": 17}}  # fmt: skip
    shown = text_of(round_panel({"state": "settled"}, rnd, {}, enabled=set(), keys={}))
    assert "A♥ 6♣ = soft 17" in shown  # PT-2001 r.19: the dealer stands on 17, soft or not
    settlement = {
        "round_id": "S-1",
        "dealer_cards": ["AH", "6C"],
        "dealer_total": 17,
        "seat_nets": {"1": 1000},
    }
    assert str(settled_summary(settlement, "EUR")).startswith("Last round, dealer soft 17, net in EUR")
    assert "Dealer: A♥ 6♣ = soft 17" in settlement_lines(settlement)
    assert "Settled" in shown and "Complete" not in shown  # one word, as the banner says it
    row = next(line for line in shown.splitlines() if line.strip().startswith("Seat 1"))
    assert "doubled" in row and "stood" not in row and "20.00" in row
    rnd["dealer"] = {"cards": ["AH", "??"], "total": 11, "hole_card_hidden": True}
    dealer = next(line for line in text_of(round_panel({}, rnd, {}, enabled=set(), keys={})).splitlines()
                  if line.strip().startswith("Dealer"))  # fmt: skip
    assert "A♥ (face down)" in dealer and "11" not in dealer


def test_the_selection_shows_the_stake_the_rows_show() -> None:
    line = str(entry_line(seat=1, seats=7, bet=[2000], chip=1000, chips=(500, 1000), currency="EUR"))
    assert "bet 20.00 EUR" in line  # after a double
    line = str(entry_line(seat=1, seats=7, bet=[1000, 1000], chip=1000, chips=(500, 1000), currency="EUR"))
    assert "bets 10.00 + 10.00 EUR" in line  # after a split: each hand as its row
    assert "bet none" in str(entry_line(seat=1, seats=7, bet=None, chip=1000, chips=(500, 1000)))


def test_the_shoe_says_decks_in_words_and_the_deck_check_result_pt2001_r55() -> None:
    assert decks_text({"decks": None, "cards_inside": 0}) == "none loaded" and decks_text({"decks": 6}) == "6"
    ok = deck_check_text({"ok": True, "decks": 6, "total": 312})[0]
    assert ok == "deck check: every deck complete (6 decks, 312 cards)"
    bad = deck_check_text({"ok": False, "decks": 6, "total": 311, "missing": {"KS": 1}, "extra": {}})[0]
    assert "FAILED" in bad and "missing K♠" in bad and "KS" not in bad


def test_no_card_past_a_decision_a_stand_or_a_damaged_card_pt2001_r19_r51() -> None:
    players = {"state": "players", "dealer_inputs": ["hit", "stand"]}
    why = card_refusal(players, {"allowed_actions": ["hit", "split", "stand"]}, {"hit", "stand"}, KEYS)
    assert why is not None and why.startswith("a decision is due") and "p: split" in why
    assert (
        card_refusal({"state": "players", "dealer_inputs": []}, {"allowed_actions": []}, set(), KEYS) is None
    )
    assert "stands" in str(card_refusal({"state": "dealer"}, {"complete": True}, set(), KEYS))
    assert "settled" in str(card_refusal({"state": "settled"}, {"complete": True}, set(), KEYS)).lower()
    damaged = {"state": "dealing", "awaiting_card_replacement": True, "dealer_inputs": []}
    assert "F14" in str(card_refusal(damaged, {}, set(), KEYS))
    hint = _hint(damaged)
    assert "F14 (supervisor)" in hint and "c:" not in hint and "PT-2001 r.51" in hint


def _hint(table: dict[str, Any], **kw: Any) -> str:
    args: dict[str, Any] = {"status": "online", "table": table, "rnd": {}, "shoe": {}, "jam": {}, "lid": {},
                            "enabled": set(table.get("dealer_inputs") or []), "keys": KEYS, "demo": True,
                            "seat": 1, "chip": "50.00", "chip_amount": 5000}  # fmt: skip
    return next_hint(**(args | kw))


def test_next_never_names_a_bet_beyond_the_limits_pt2001_r37() -> None:
    table = {"state": "betting", "dealer_inputs": ["place_bet", "clear_bet", "no_more_bets"],
             "limits": {"min_bet": 500, "max_bet": 15000}}  # fmt: skip
    assert "b: add 50.00 on Seat 1" in _hint(table, bet=10000)
    over = _hint(table, bet=12500)  # 125.00 + 50.00 > 150.00: refused by the table
    assert "b:" not in over and "smaller chip" in over and over.startswith("n: no more bets")
    full = _hint(table, bet=15000)
    assert "b:" not in full and "another seat" in full
    assert _hint({"state": "betting", "dealer_inputs": []}).startswith("betting: wait")


def test_without_a_supervisor_channel_next_says_who_not_a_key_it_cannot_send() -> None:
    closed = {"state": "closed", "cards_inside": 0, "dealer_inputs": []}
    assert "F2 (supervisor) opens it" in _hint(closed)
    hint = _hint(closed, supervisor=False)
    assert "F2" not in hint and "a supervisor opens it" in hint and "supervisor account" in hint


def test_a_damaged_card_is_replaced_by_its_face_and_the_table_opened_by_the_games_name() -> None:
    assert [card_code(t) for t in ("K♠", "ks", "10♥", "10h", "TH", "q ♣")] == [
        "KS",
        "KS",
        "TH",
        "TH",
        "TH",
        "QC",
    ]
    assert [card_code(t) for t in ("", "K", "1H", "11H", "KX", "♠K", "KSS")] == [None] * 7
    with pytest.raises(SupervisorArgumentError, match="as on its face"):  # refused before anything is signed
        supervisor_call("replace_card", _cred("zz"), None, "pt-2001", [])  # type: ignore[arg-type]


def _cred(arg: str) -> Any:
    from controller.terminal.credentials import Credential

    return Credential("alice", "123456", arg)


def test_the_open_prompt_shows_the_games_name() -> None:
    default = supervisor_default("open_table", "pt-2001", [], [])
    assert default == game_name("pt-2001") and "Portaria 1364/2001" in default and "pt-2001" not in default
    assert profile_of_game(default) == "pt-2001" and profile_of_game(" pt-2001 ") == "pt-2001"
    assert profile_of_game("MO-2004") == "mo-2004" and profile_of_game("house game") == "house game"


def test_the_key_legend_lists_only_keys_this_table_can_enable() -> None:
    table = {"state": "betting", "profile": "pt-2001", "shuffler": "continuous"}
    shown = shown_inputs(table, {}, {"enabled": True, "mode": "automatic"}, set())
    conn = PitConnection(host="h", port=1, user="dealer", password="", prefix="casino/s/table/t")
    keys = str(legend(conn, shown))
    dealer = next(line for line in keys.splitlines() if line.startswith("Dealer:"))
    for key in ("j", "f", "t"):  # jackpot chip (sensed, r.41a), five cards (no r.18 rule), cut (r.52)
        assert (
            f" {key} {DEALER_KEYS[next(a for a, (k, _) in DEALER_KEYS.items() if k == key)][1]}" not in dealer
        )
    assert " h Hit" in dealer and " p Split" in dealer and "F14 Replace card" in keys


class _Demo:
    """The demo's hardware as the terminal sees it (pit_connection.DemoHardware), with nothing behind it."""

    chip_sensor = True

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def sense_chip(self, seat: int) -> None:
        return None

    async def damaged_card(self) -> str | None:
        return None


@pytest.mark.parametrize("size", [(120, 40), (80, 40), (200, 60)])
async def test_every_button_shows_its_whole_label_with_its_key(size: tuple[int, int]) -> None:
    """'At the machine (l)', 'Replace card (F14)': no label cut at any size the buttons are shown (from 32 rows).
    No broker: the layout alone."""
    import socket

    from test_terminal import screen_text
    from textual.widgets import Button

    from controller.terminal.pit import PitApp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there
    conn = PitConnection("127.0.0.1", port, "dealer", "x", "casino/demo/table/demo1", demo=_Demo(),
                         supervisor_account="supervisor1", supervisor_password="x")  # fmt: skip
    app = PitApp(conn)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        screen = screen_text(app)
        labels = [str(b.label) for b in app.query(Button) if b.display and b.region.width]
        assert "At the machine (l)" in labels and "Replace card (F14)" in labels
        for label in labels:
            assert label in screen, (label, screen)
