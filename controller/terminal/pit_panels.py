"""The pit terminal's panels, drawn from the controller's retained documents and events: the banner, the round,
the last round, the shoe (with the jackpot and the dealer's results), the open alerts and the selection line.

Pure functions of the documents they are given (each ``{}`` when none has arrived): every value from outside
goes through controller/plain.py (text, never markup).
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from controller.plain import clean, plain
from controller.terminal.pit_summary import allowed_text
from controller.terminal.view import (
    DealerResults,
    dealer_blackjack,
    dealer_soft,
    hand_text,
    lid_text,
    settlement_lines,
    turn_text,
)
from controller.words import (
    ALERT_WORDS,
    COMBINATION_WORDS,
    PHASE_WORDS,
    SEVERITY_WORDS,
    STATE_WORDS,
    STATUS_WORDS,
    UNKNOWN,
    card_face,
    hand_label,
    in_words,
    money,
    words,
)


def banner_text(
    *,
    connected: bool,
    status: str,
    prefix: str,
    table: dict[str, Any],
    sw: dict[str, Any],
    jackpot: dict[str, Any],
    why: str = "",
    compact: bool = False,
) -> Text:
    """The broker / controller state (``why``: the last connection failure), the table's state and session, the
    software and, if any, the meter; ``compact`` (a short terminal): one line, the software on the details page
    instead."""
    if not connected:
        reason = f" ({clean(why, 120)})" if why else ""
        top = Text(
            f"BROKER UNREACHABLE{reason} — showing the last known state; inputs disabled; reconnecting…"
        )
    elif status != "online":
        status = "status unknown" if status == "unknown" else clean(status, 20).upper()
        top = Text(f"CONTROLLER {status} — inputs disabled until it is online")
    else:
        session_id = clean(table.get("session_id") or ("none" if table else UNKNOWN), 40)
        session = "" if compact else f" · session {session_id}"
        on_duty = table.get("dealer")  # issue 29: shown as text, only while someone is signed in
        dealer = f" · dealer {clean(on_duty, 32)}" if isinstance(on_duty, str) and on_duty else ""
        top = Text.assemble(
            f"{clean(prefix.rsplit('/', 1)[-1], 40)} · {'online' if compact else 'controller online'} · ",
            (clean(words(STATE_WORDS, table.get("state")), 40) if table else UNKNOWN, "bold"),
            dealer,
            session,
        )
    # state/software (the service publishes it, retained): unknown until it arrives
    software = Text(
        f"software {clean(sw.get('version') or UNKNOWN, 30)} · profile "
        f"{clean(sw.get('profile') or table.get('profile') or UNKNOWN, 40)} · rule book "
        f"{clean(sw.get('rule_book') or UNKNOWN, 40)}"
    )
    meter = Text(f" · jackpot {money(jackpot.get('meter'), currency_of(jackpot))}", style="bold")
    if jackpot.get("meter") is not None:  # the meter as it increments, seen at any size
        (top if compact else software).append_text(meter)
    return top if compact else Text("\n").join([top, software])


def currency_of(jackpot: dict[str, Any]) -> str | None:
    """The table's currency as its state/jackpot says (ISO 4217), None while unknown."""
    cur = jackpot.get("currency")
    return cur if isinstance(cur, str) and len(cur) == 3 and cur.isascii() and cur.isupper() else None


def round_panel(
    table: dict[str, Any],
    rnd: dict[str, Any],
    burnt: dict[str, list[str]],
    *,
    enabled: set[str],
    keys: dict[str, str],
    currency: str | None = None,
    compact: bool = False,
) -> Table:
    """The round's hands (or, while betting, the bets placed), the dealer's cards and the burn cards; below,
    whose turn it is and the inputs allowed now with their keys. ``compact``: no column headers (80x24)."""
    title = (
        f"Round {clean(rnd.get('round_id') or '—', 40)}  ·  {clean(words(PHASE_WORDS, rnd.get('phase')), 40)}"
        if rnd
        else "Round: unknown (no report yet)"
    )
    unit = f" ({currency})" if currency else ""  # the amounts' currency, said once (the cells stay narrow)
    if compact and currency and rnd:
        title += f"  ·  bets in {currency}"
    burnt_cards = burnt.get(str(rnd.get("round_id")), [])
    burnt_text = " ".join(card_face(c) for c in burnt_cards)
    if compact and burnt_cards:  # on the title line: one row more for the hands at 80x24
        title += f"  ·  burnt {burnt_text}"
    grid = Table(title=Text(title, style="bold"), expand=True, box=box.SIMPLE_HEAD, show_edge=False,
                 padding=(0, 1), show_header=not compact)  # fmt: skip
    for col in ("hand", f"bet{unit}", "cards = total", "status"):
        grid.add_column(col)
    seats = [s for s in rnd.get("seats") or [] if isinstance(s, dict)]
    if seats:
        for seat in seats:
            chip = " +JP" if seat.get("jackpot_chip") else ""
            ins = f" ins {money(seat['insurance'])}" if seat.get("insurance") else ""
            hands = [h for h in seat.get("hands") or [] if isinstance(h, dict)]
            for hand in hands:
                label = hand_label(seat.get("seat"), hand.get("hand", 0), len(hands) > 1)
                stake = money(hand.get("stake", seat.get("bet"))) + chip + ins
                status = words(STATUS_WORDS, hand_status(hand))
                grid.add_row(
                    plain(label, 30), plain(stake, 40), plain(hand_text(hand), 80), plain(status, 30)
                )
    else:
        bets = v if isinstance(v := table.get("bets"), dict) else {}
        for seat, bet in sorted(bets.items(), key=lambda kv: str(kv[0]).zfill(4)):
            amount = bet.get("amount") if isinstance(bet, dict) else None
            grid.add_row(plain(f"Seat {seat}", 30), plain(money(amount)), plain(""), plain("bet placed"))
    dealer = v if isinstance(v := rnd.get("dealer"), dict) else {}
    if dealer.get("cards"):
        natural = dealer_blackjack(dealer)  # marked as a seat's natural is (the document does not flag it)
        total = dealer.get("total")
        status = "blackjack" if natural else ("bust" if isinstance(total, int) and total > 21 else "")
        shown = {**dealer, "blackjack": natural, "soft": dealer_soft(dealer)}
        grid.add_row(plain("Dealer"), plain(""), plain(hand_text(shown), 80),
                     plain(status))  # fmt: skip
    if burnt_cards and not compact:
        grid.add_row(plain("Burnt"), plain(""), plain(burnt_text, 80),
                     plain("burn card" + ("s" if len(burnt_cards) > 1 else "")))  # fmt: skip
    turn = v if isinstance(v := rnd.get("turn"), dict) else {}
    split = any(len(s.get("hands") or []) > 1 for s in seats if s.get("seat") == turn.get("seat"))
    grid.caption = Text(
        clean(
            f"turn: {turn_text(turn, split)}  ·  allowed: {allowed_text(enabled, keys)}",
            300,
        )
    )
    grid.caption_justify = "left"
    return grid


def hand_status(hand: dict[str, Any]) -> Any:
    """A hand's status as the dealer says it: a doubled hand that took its one card is 'doubled', not 'stood'."""
    status = hand.get("status")
    return "doubled" if hand.get("doubled") and status == "stood" else status


def last_round_panel(last_settlement: dict[str, Any], currency: str | None = None) -> Text:
    return Text("Last round\n", style="bold") + Text(
        "\n".join(clean(line, 200) for line in settlement_lines(last_settlement, currency))
    )


def shoe_panel(
    *,
    shoe: dict[str, Any],
    lid: dict[str, Any],
    jam: dict[str, Any],
    table: dict[str, Any],
    jackpot: dict[str, Any],
    have_jackpot: bool,
    hits: list[dict[str, Any]],
    results: DealerResults,
    deck_check: dict[str, Any] | None = None,
) -> Text:
    """The shoe, lid, jam, link and faults, the last deck check (PT-2001 r.55); the jackpot meter and its
    pending hits; the dealer's results."""
    have_shoe = bool(shoe)

    def val(doc: dict[str, Any], key: str) -> str:
        return clean(doc.get(key, UNKNOWN) if doc else UNKNOWN, 20)

    lid_state = clean(lid_text(lid), 80) if lid else UNKNOWN
    if lid and shoe.get("shuffling"):
        lid_state = "shuffling"
    if not jam:
        jam_line = (f"jam: {UNKNOWN}", "")
    elif jam.get("jammed") and jam.get("device_cleared"):
        jam_line = ("jam: cleared on the device — F4 releases the table", "bold yellow")
    elif jam.get("jammed"):
        jam_line = (f"jam: JAMMED at {clean(jam.get('location', '?'), 40)}", "bold red")
    elif table.get("state") == "jammed":
        jam_line = ("jam: cleared on the device — F4 releases the table", "bold yellow")
    else:
        jam_line = ("jam: no", "")
    faults = [clean(f, 40) for f in table.get("faults") or []] if table else [UNKNOWN]
    meter = money(jackpot.get("meter"), currency_of(jackpot)) if jackpot else "no jackpot"
    meter = meter if have_jackpot else UNKNOWN
    if isinstance(jackpot.get("link"), dict):  # a linked progressive: one meter for the bank, on the sign
        meter = "the link's, shown on the sign"
    lines = [
        ("Shoe", "bold"),
        (f"cards dealt: {val(shoe, 'dealt_this_shoe')}   out: {val(shoe, 'cards_out')}", ""),
        (f"cards inside: {val(shoe, 'cards_inside')}   decks: {decks_text(shoe)}", ""),
        (f"warning card: {'out: LAST ROUND' if shoe.get('last_round_of_shoe') else 'no'}"
         if have_shoe else f"warning card: {UNKNOWN}", ""),
        (f"lid: {lid_state}", ""),
        jam_line,
        link_line(shoe.get("linked", True) if have_shoe else None, "link_down" in faults),
        (f"faults: {', '.join(faults) or 'none'}", "bold red" if table.get("faults") else ""),
        deck_check_text(deck_check or {}),
        ("", ""),
        (f"Jackpot meter: {meter}", "bold"),
        *([link_text(jackpot)] if isinstance(jackpot.get("link"), dict) else []),
        (f"pending hits: {hits_text(hits, currency_of(jackpot))}", ""),
        (f"Dealer's last results: {clean(results.text(), 120)}", "bold"),
    ]  # fmt: skip
    out = Text()
    for text, style in lines:
        out.append(text + "\n", style=style)
    return out


def decks_text(shoe: dict[str, Any]) -> str:
    """The decks the session's profile deals with; 'none loaded' before a session opened (state/shoe null)."""
    if not shoe:
        return UNKNOWN
    decks = shoe.get("decks")
    if isinstance(decks, int) and not isinstance(decks, bool):
        return str(decks)
    return "none loaded" if decks is None else clean(decks, 20)


def deck_check_text(check: dict[str, Any]) -> tuple[str, str]:
    """The last deck check's result (events/deck_check, PT-2001 r.55) in words, and its style."""
    if not check:
        return ("deck check: none since this terminal started", "")
    total = check.get("total")
    counted = f", {total} cards" if isinstance(total, int) and not isinstance(total, bool) else ""
    decks = check.get("decks")
    of = f" ({decks} decks{counted})" if isinstance(decks, int) and not isinstance(decks, bool) else counted
    if check.get("ok"):
        return (f"deck check: every deck complete{of}", "bold green")
    parts = []
    for key, label in (("missing", "missing"), ("extra", "extra"), ("unknown", "unknown")):
        found = check.get(key)
        if isinstance(found, dict) and found:
            cards = ", ".join(
                f"{card_face(c)}" + (f" x{n}" if n != 1 else "") for c, n in list(found.items())[:8]
            )
            parts.append(f"{label} {cards}")
    unreadable = check.get("unreadable")
    if isinstance(unreadable, int) and not isinstance(unreadable, bool) and unreadable:
        parts.append(f"{unreadable} unreadable")
    return (clean(f"deck check FAILED{of}: {'; '.join(parts) or 'see the alert'}", 200), "bold red")


def link_text(jackpot: dict[str, Any]) -> tuple[str, str]:
    """A linked progressive (``state/jackpot.link``): whether its chips are taken now and, when not, why (the
    link out of reach, suspended, or a hit here awaiting payment); the meter is the link's, on the sign."""
    link = jackpot.get("link") or {}
    name = clean(str(link.get("name", "?")), 32)
    if jackpot.get("playable"):
        return (f"progressive {name}: linked chips accepted (the meter is the link's, on the sign)", "")
    return (
        f"progressive {name}: linked chips REFUSED: {clean(str(jackpot.get('reason', '?')), 120)}",
        "bold red",
    )


def pending_hits(jackpot: dict[str, Any]) -> list[dict[str, Any]]:
    """Jackpot hits waiting for a supervisor to verify and pay them (PT-2001 r.49-50), from the retained
    ``state/jackpot``: a terminal started later still sees them."""
    hits = jackpot.get("pending_hits") or []
    return [h for h in hits if isinstance(h, dict)] if isinstance(hits, list) else []


def hits_text(hits: list[dict[str, Any]], currency: str | None = None) -> str:
    if not hits:
        return "none"
    return "; ".join(
        clean(f"#{h.get('hit_id')} Seat {h.get('seat')} {words(COMBINATION_WORDS, h.get('combination'))} "
              f"{money(h.get('amount'), currency)} "
              f"{'verified' if h.get('verified') else 'to verify'}", 120)
        for h in hits[:5]
    )  # fmt: skip


def alerts_panel(alerts_open: list[Any]) -> Text:
    alerts = [a for a in alerts_open if isinstance(a, dict)]
    out = Text("Open alerts\n", style="bold")
    if not alerts:
        out.append("none\n")
    for a in alerts[-6:]:
        style = "bold red" if a.get("severity") == "critical" else ""
        out.append(clean(f"#{a.get('alert_id')} {words(ALERT_WORDS, a.get('kind'))} "
                         f"({words(SEVERITY_WORDS, a.get('severity'))}): {in_words(str(a.get('reason')))}", 200)
                   + "\n", style=style)  # fmt: skip
    return out


def seated_player(players: dict[str, Any], seat: int) -> str | None:
    """The player at ``seat`` as ``state/players`` names him (``card:<number>`` or a pseudonym), or None."""
    seats = players.get("seats")
    entry = seats.get(str(seat)) if isinstance(seats, dict) else None
    player = entry.get("player") if isinstance(entry, dict) else None
    return player if isinstance(player, str) and player else None


def entry_line(
    *, seat: int, seats: int, bet: Any, chip: int, chips: tuple[int, ...], currency: str | None = None,
    players: dict[str, Any] | None = None,
) -> Text:  # fmt: skip
    """The selection: seat, its bet (during a round each hand's stake as its row shows it: 'bet 20.00' after a
    double, 'bets 10.00 + 10.00' after a split), the chip and the chip range; the seat's player once the table
    publishes ``state/players`` (issue 41)."""
    stakes = bet if isinstance(bet, list) else [bet]
    shown = " + ".join(money(b) for b in stakes) if stakes and stakes[0] is not None else "none"
    label = " · bets " if len(stakes) > 1 else " · bet "
    return Text.assemble(
        ("Seat ", "bold"), (str(seat), "bold"), f" (1-{seats}){label}", shown,
        f" {currency}" if currency and shown != "none" else "", " · chip ", (money(chip, currency), "bold"),
        f" ([ ] {money(chips[0])}-{money(chips[-1], currency)})",
        *((f" · player {clean(seated_player(players, seat) or 'none', 60)}",) if players is not None else ()),
    )  # fmt: skip


def link_line(linked: Any, fault: bool) -> tuple[str, str]:
    """The shoe link: unknown (nothing reported yet), down, back but its fault not yet cleared (F12), or ok."""
    if linked is None:
        return (f"link: {UNKNOWN}", "")
    if not linked:
        return ("link: DOWN", "bold red")
    if fault:
        return ("link: back, fault raised: a supervisor clears it (F12)", "bold yellow")
    return ("link: ok", "")
