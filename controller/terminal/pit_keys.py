"""The pit terminal's keys: the dealer's inputs, the supervisor's signed actions, the demo's stand-ins for the
dealer's hands, and the Textual bindings built from them (docs/terminal.md)."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from controller.actions import DECLINE_INSURANCE

DEALER_KEYS: dict[str, tuple[str, str]] = {  # command -> (key, label)
    "place_bet": ("b", "Bet +chip"),
    "clear_bet": ("x", "Clear bet"),
    "jackpot_chip": ("j", "JP chip"),
    "no_more_bets": ("n", "No more bets"),
    "hit": ("h", "Hit"),
    "stand": ("s", "Stand"),
    "double": ("d", "Double"),
    "split": ("p", "Split"),
    "surrender": ("r", "Surrender"),
    "insurance": ("i", "Insurance"),
    DECLINE_INSURANCE: ("o", "No insurance"),
    "even_money": ("e", "Even money"),
    "five_card": ("f", "Five cards"),  # MO-2004 art.19
    "next_round": ("g", "Next round"),
    "cut": ("t", "Cut"),  # batch shoe only (PT-2001 r.8)
}
# supervisor action -> (key, label, argument prompt or None)
SUPERVISOR_KEYS: dict[str, tuple[str, str, str | None]] = {
    "open_table": ("f2", "Open table", "the game, by its name or its rule book (e.g. PT-2001)"),
    "close_table": ("f3", "Close table", None),
    "clear_jam": ("f4", "Clear jam", None),
    "unlock_lid": ("f5", "Unlock lid", None),
    "lock_lid": ("f6", "Lock lid", None),
    "jackpot_verify": ("f7", "JP verify", "jackpot hit id"),
    "jackpot_pay": ("f8", "JP pay", "jackpot hit id"),
    "ack_alert": ("f9", "Ack alerts", "alert ids (comma separated, empty = all open)"),
    "ack_deck_check": ("f10", "Deck ack", None),
    "clear_link": ("f12", "Clear link", None),  # once the link is back (F11: fullscreen in most terminals)
    # dual control (docs/jackpot.md "Corrections"): one supervisor asks, a different one confirms
    "jackpot_correct": ("f1", "JP correct", "new meter (minor units) and the reason, e.g. 150000 void round"),
    "jackpot_correct_confirm": ("f13", "JP confirm", "correction id to confirm"),  # F13: Shift+F1
    # PT-2001 r.51: a damaged or unreadable card is replaced at once by a chief inspector (the supervisor role,
    # controller/mqtt/auth.py); the dealer waits meanwhile. F14: Shift+F2.
    "replace_card": ("f14", "Replace card", "the replacement card, e.g. K♠, KS or 10H"),
}
# The dealer on duty signs in (issue 29): a prompt for the name, sent as dealer_sign_in; in the footer.
DEALER_SIGN_IN_KEY = ("w", "Dealer sign-in")
# A player at the selected seat (issue 41): a prompt for the card (swiped or typed) or a description, and the
# player's leaving; in the footer. A swipe into the main screen seats the player without the prompt.
PLAYER_KEYS: dict[str, tuple[str, str]] = {"player_in": ("a", "Player in"), "player_out": ("z", "Player out")}
# Demo only (`tablectl demo`): what the dealer's hands and the hardware do, played on the emulated parts.
DEMO_KEYS: dict[str, tuple[str, str]] = {  # demo action -> (key, label)
    "draw": ("c", "Draw card"),
    "machine": (
        "l",
        "At the machine",
    ),  # cards in + lid / load in two packets / cards out: by the table state
    "chip": ("k", "Chip sensed"),
    "jam": ("m", "Jam the shoe"),
    "free": ("u", "Free the jam"),
    "damaged": ("v", "Damaged card"),
}


def hint_keys() -> dict[str, str]:
    """Every key by its action's name, as the "next:" line names them ("F4" for clear_jam, "c" for draw)."""
    keys = {a: k for a, (k, _) in DEMO_KEYS.items()}
    keys.update({a: k.upper() for a, (k, _, _) in SUPERVISOR_KEYS.items()})
    keys.update({a: k for a, (k, _) in DEALER_KEYS.items()})
    keys["dealer_sign_in"] = DEALER_SIGN_IN_KEY[0]
    keys.update({a: k for a, (k, _) in PLAYER_KEYS.items()})
    return keys


def bindings() -> list[BindingType]:
    """Seats 1-9 (the table's seats are taken), the chip selector, every key of the tables above, PageDown /
    PageUp to the parts below the round (named in the footer), q to quit."""
    keys: list[BindingType] = [Binding(str(n), f"seat({n})", f"seat {n}", show=False) for n in range(1, 10)]
    keys += [
        Binding("left_square_bracket", "chip(-1)", "chip -", show=False),
        Binding("right_square_bracket", "chip(1)", "chip +", show=False),
    ]
    keys += [Binding(k, f"dealer('{a}')", label, show=False) for a, (k, label) in DEALER_KEYS.items()]
    keys += [
        Binding(k, f"supervisor('{a}')", label, show=False) for a, (k, label, _) in SUPERVISOR_KEYS.items()
    ]
    keys += [Binding(k, f"demo('{a}')", label, show=False) for a, (k, label) in DEMO_KEYS.items()]
    keys.append(Binding(DEALER_SIGN_IN_KEY[0], "sign_in", DEALER_SIGN_IN_KEY[1]))  # shown in the footer
    keys += [Binding(k, a, label) for a, (k, label) in PLAYER_KEYS.items()]  # action_player_in / _out
    keys += [
        Binding("pagedown", "page(1)", "more below", key_display="PgDn", priority=True),
        Binding("pageup", "page(-1)", "back up", key_display="PgUp", priority=True),
    ]
    keys.append(Binding("q", "quit", "Quit"))
    return keys
