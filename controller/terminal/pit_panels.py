"""The pit terminal's panels, drawn from the controller's retained documents and events: the banner, the round,
the last round, the shoe (with the jackpot and the dealer's results), the open alerts and the selection line.

Pure functions of the documents they are given (each ``{}`` when none has arrived): every value from outside
goes through controller/terminal/plain.py (text, never markup).
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from controller.terminal.plain import clean, plain
from controller.terminal.view import (
    ACTION_WORDS,
    PHASE_WORDS,
    STATE_WORDS,
    STATUS_WORDS,
    UNKNOWN,
    DealerResults,
    card_text,
    hand_label,
    hand_text,
    lid_text,
    money,
    settlement_lines,
    turn_text,
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
) -> Text:
    """The broker / controller state (``why``: the last connection failure), the table's state and session, the
    software and, if any, the meter."""
    if not connected:
        reason = f" ({clean(why, 120)})" if why else ""
        top = Text(
            f"BROKER UNREACHABLE{reason} — showing the last known state; inputs disabled; reconnecting…"
        )
    elif status != "online":
        status = "status unknown" if status == "unknown" else clean(status, 20).upper()
        top = Text(f"CONTROLLER {status} — inputs disabled until it is online")
    else:
        top = Text.assemble(
            f"{clean(prefix.rsplit('/', 1)[-1], 40)} · controller online · ",
            (clean(words(STATE_WORDS, table.get("state")), 40) if table else UNKNOWN, "bold"),
            f" · session {clean(table.get('session_id') or ('none' if table else UNKNOWN), 40)}",
        )
    # state/software (the service publishes it, retained): unknown until it arrives
    software = Text(
        f"software {clean(sw.get('version') or UNKNOWN, 30)} · profile "
        f"{clean(sw.get('profile') or table.get('profile') or UNKNOWN, 40)} · rule book "
        f"{clean(sw.get('rule_book') or UNKNOWN, 40)}"
    )
    if jackpot.get("meter") is not None:  # the meter as it increments, seen at any size
        software.append(f" · jackpot {money(jackpot.get('meter'))}", style="bold")
    return Text("\n").join([top, software])


def round_panel(table: dict[str, Any], rnd: dict[str, Any], burnt: dict[str, list[str]]) -> Table:
    """The round's hands (or, while betting, the bets placed), the dealer's cards and the burn cards."""
    title = (
        f"Round {clean(rnd.get('round_id') or '—', 40)}  ·  {clean(words(PHASE_WORDS, rnd.get('phase')), 40)}"
        if rnd
        else "Round: unknown (no report yet)"
    )
    grid = Table(title=Text(title, style="bold"), expand=True, box=box.SIMPLE_HEAD, show_edge=False,
                 padding=(0, 1))  # fmt: skip
    for col in ("hand", "bet", "cards = total", "status"):
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
                status = words(STATUS_WORDS, hand.get("status"))
                grid.add_row(
                    plain(label, 30), plain(stake, 40), plain(hand_text(hand), 80), plain(status, 30)
                )
    else:
        bets = table.get("bets") if isinstance(table.get("bets"), dict) else {}
        for seat, bet in sorted(bets.items(), key=lambda kv: str(kv[0]).zfill(4)):
            amount = bet.get("amount") if isinstance(bet, dict) else None
            grid.add_row(plain(f"Seat {seat}", 30), plain(money(amount)), plain(""), plain("bet placed"))
    dealer = rnd.get("dealer") if isinstance(rnd.get("dealer"), dict) else {}
    if dealer.get("cards"):
        grid.add_row(plain("Dealer"), plain(""), plain(hand_text(dealer), 80), plain(""))
    burnt_cards = burnt.get(str(rnd.get("round_id")), [])
    if burnt_cards:
        grid.add_row(plain("Burnt"), plain(""), plain(" ".join(card_text(c) for c in burnt_cards), 80),
                     plain("burn card" + ("s" if len(burnt_cards) > 1 else "")))  # fmt: skip
    split = any(len(s.get("hands") or []) > 1 for s in seats)
    allowed = ", ".join(words(ACTION_WORDS, a) for a in rnd.get("allowed_actions") or []) or "—"
    grid.caption = Text(
        clean(f"turn: {turn_text(rnd.get('turn'), split or None)}  ·  allowed: {allowed}", 200)
    )
    return grid


def last_round_panel(last_settlement: dict[str, Any]) -> Text:
    return Text("Last round\n", style="bold") + Text(
        "\n".join(clean(line, 200) for line in settlement_lines(last_settlement))
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
) -> Text:
    """The shoe, lid, jam, link and faults; the jackpot meter and its pending hits; the dealer's results."""
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
    meter = (money(jackpot.get("meter")) if jackpot else "no jackpot") if have_jackpot else UNKNOWN
    lines = [
        ("Shoe", "bold"),
        (f"cards dealt: {val(shoe, 'dealt_this_shoe')}   out: {val(shoe, 'cards_out')}", ""),
        (f"cards inside: {val(shoe, 'cards_inside')}   decks: {val(shoe, 'decks')}", ""),
        (f"warning card: {'out: LAST ROUND' if shoe.get('last_round_of_shoe') else 'no'}"
         if have_shoe else f"warning card: {UNKNOWN}", ""),
        (f"lid: {lid_state}", ""),
        jam_line,
        link_line(shoe.get("linked", True) if have_shoe else None, "link_down" in faults),
        (f"faults: {', '.join(faults) or 'none'}", "bold red" if table.get("faults") else ""),
        ("", ""),
        (f"Jackpot meter: {meter}", "bold"),
        (f"pending hits: {hits_text(hits)}", ""),
        (f"Dealer's last results: {clean(results.text(), 120)}", "bold"),
    ]  # fmt: skip
    out = Text()
    for text, style in lines:
        out.append(text + "\n", style=style)
    return out


def pending_hits(jackpot: dict[str, Any]) -> list[dict[str, Any]]:
    """Jackpot hits waiting for a supervisor to verify and pay them (PT-2001 r.49-50), from the retained
    ``state/jackpot``: a terminal started later still sees them."""
    hits = jackpot.get("pending_hits") or []
    return [h for h in hits if isinstance(h, dict)] if isinstance(hits, list) else []


def hits_text(hits: list[dict[str, Any]]) -> str:
    if not hits:
        return "none"
    return "; ".join(
        clean(f"#{h.get('hit_id')} Seat {h.get('seat')} {h.get('combination')} {money(h.get('amount'))} "
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
        out.append(clean(f"#{a.get('alert_id')} {a.get('kind')} {a.get('severity')}: {a.get('reason')}", 200)
                   + "\n", style=style)  # fmt: skip
    return out


def entry_line(*, seat: int, seats: int, bet: Any, chip: int, chips: tuple[int, ...]) -> Text:
    """The selection: seat, its bet, the chip and the chip range."""
    return Text.assemble(
        ("Seat ", "bold"), (str(seat), "bold"), f" (1-{seats}) · bet ",
        money(bet) if bet is not None else "none", " · chip ", (money(chip), "bold"),
        f" ([ ] {money(chips[0])}-{money(chips[-1])}) · x clears",
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
