"""Dispute reports (PT-2001 r.62: complaints are heard before the cards go back into the shuffler).

`build(...)` turns a replayed round into a plain report model (sections of rows of strings); `text(...)` and
`html_page(...)` render it. Every string that came from the round file (profile names, players, comments, card
codes, the journal's ids) reaches the HTML page only through `html.escape`: the page shows it as text. Pure: no
I/O.

In an inspector's words (controller/words.py, issue 30): cards as on the table (`K♠`), hands numbered from 1 as
the pit terminal numbers them, decisions and outcomes in words (`No insurance`, `loses`), amounts in major units
(`+20.00`) with the currency when the round's record names it.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

from controller.jackpot.hits import Combination, evaluate
from controller.rules.cards import RED_SUITS, Card
from controller.rules.profiles import game_name, game_title
from controller.words import (
    ACTION_WORDS,
    OUTCOME_WORDS,
    RECIPIENT_WORDS,
    SUIT_SYMBOLS,
    card_face,
    hand_label,
    in_words,
    words,
)
from controller.words import money as _money_words

CURRENCY = re.compile(r"[A-Z]{3}")  # ISO 4217
# what an amount is in when nobody named the currency (the records' whole numbers are cents: 1000 is 10.00)
UNNAMED_CURRENCY = "in the table's currency, cents after the point"

_JACKPOT_WORDS = {
    Combination.FOUR_ACES_ONE_COLOUR: "r.43a: first four cards all red or all black aces, 100 % of the jackpot",
    Combination.THREE_ACES_SUITED: "r.43b: first three cards aces of one suit, 2,500 x the jackpot bet",
    Combination.THREE_ACES_MIXED: "r.43c: first three cards aces of different suits, 250 x the jackpot bet",
    Combination.TWO_ACES_SUITED: "r.43d: first two cards aces of one suit, 100 x the jackpot bet",
    Combination.TWO_ACES_MIXED: "r.43e: first two cards aces of different suits, 25 x the jackpot bet",
}


@dataclass
class Section:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    cards_column: int | None = None  # a column holding card codes (pictures in HTML)


@dataclass
class Report:
    title: str
    verdict: str  # one line: settled / refused, agreement with the journal
    ok: bool
    sections: list[Section] = field(default_factory=list)


def money(n: int) -> str:
    """A net amount for people: '+20.00', '-10.00', '0.00' (major units, controller/words.py)."""
    return _money_words(n, sign=True)


def amount(n: Any) -> str:
    """A stake or bet: '10.00'."""
    return _money_words(n) if isinstance(n, int) and not isinstance(n, bool) else str(n)


def _where(to: Any, split: frozenset[Any] = frozenset()) -> str:
    """'Seat 1' for a seat playing one hand, 'Seat 1, hand 2' only on a seat that split (``split``: its seats)."""
    if isinstance(to, dict):
        return hand_label(to.get("seat"), to.get("hand", 0), to.get("seat") in split)
    return words(RECIPIENT_WORDS, to)


_FIRST_HAND = re.compile(r"\bSeat (\d+), hand 1\b")


def _unsplit(text: str, split: frozenset[Any]) -> str:
    """A sentence from the rules (in words) with 'Seat 2, hand 1' as 'Seat 2' where seat 2 never split."""
    return _FIRST_HAND.sub(lambda m: m.group(0) if int(m.group(1)) in split else f"Seat {m.group(1)}", text)


def _split_seats(desc: dict[str, Any], hands: Any) -> frozenset[Any]:
    """The seats that played more than one hand (split), from the cards dealt and the hands settled."""
    seats = {h.seat for h in hands if isinstance(h.hand, int) and h.hand > 0}
    for c in desc.get("cards", []):
        to = c.get("recipient")
        if isinstance(to, dict) and isinstance(to.get("hand"), int) and to["hand"] > 0:
            seats.add(to.get("seat"))
    return frozenset(seats)


def _drop_empty(sec: Section, column: str) -> Section:
    """Without ``column`` when no row fills it (a player column on a table where nobody gave a name)."""
    if column not in sec.columns:
        return sec
    i = sec.columns.index(column)
    if any(i < len(row) and row[i] for row in sec.rows):
        return sec
    cards = sec.cards_column
    if cards is not None and cards > i:
        cards -= 1
    rows = [row[:i] + row[i + 1 :] for row in sec.rows]
    return Section(sec.title, sec.columns[:i] + sec.columns[i + 1 :], rows, cards)


def _faces(codes: Any) -> str:
    return " ".join(card_face(c) for c in codes)


def build(
    doc: dict[str, Any],
    result: Any = None,
    error: Any = None,
    *,
    label: str = "round",
    agreement: list[str] | None = None,
    journal: dict[str, Any] | None = None,
    default_currency: str | None = None,
) -> Report:
    """The report of one round: `result` a ReplayResult, or `error` an InvalidRound. The amounts' currency: the
    journal's (an export names it), else ``default_currency`` (``tablectl replay --currency``)."""
    profile = str(doc.get("profile", "?")) if isinstance(doc, dict) else "?"
    currency = (journal or {}).get("currency") or default_currency
    unit = (
        f"in {currency}" if isinstance(currency, str) and CURRENCY.fullmatch(currency) else UNNAMED_CURRENCY
    )
    game = game_title(result.engine.profile) if result is not None else game_name(profile)
    title = f"{label}: game {game}"
    if journal and journal.get("round_id"):
        title = f"{label}: round {journal['round_id']} (game {game})"
    if result is None:
        rule = f" ({error.rule})" if getattr(error, "rule", None) else ""
        verdict = f"INVALID round, refused: {getattr(error, 'message', error)}{rule}"
        rep = Report(title, verdict, False)
        _note(rep, doc)
        if isinstance(doc, dict) and isinstance(doc.get("bets"), list):
            rep.sections.append(_bets_from_doc(doc))
        return rep
    eng, s = result.engine, result.settlement
    if agreement is None:
        verdict = "settled"
    elif agreement:
        verdict = "settled, DISAGREES with the journal's settlement: " + "; ".join(agreement)
    else:
        verdict = "settled, agrees with the journal's settlement"
    rep = Report(f"{title}, amounts {unit}", verdict, not agreement)
    _note(rep, doc)
    rep.sections.append(_drop_empty(_bets(eng), "player"))
    desc = eng.description()
    why = eng.card_reasons()
    split = _split_seats(desc, s.hands)
    cards = Section("Cards, in the order they left the shoe", ["#", "card", "went to", "why"], cards_column=1)
    for i, (c, reason) in enumerate(zip(desc["cards"], why, strict=True), 1):
        cards.rows.append(
            [str(i), c["card"], _where(c["recipient"], split), _unsplit(in_words(reason), split)]
        )
    rep.sections.append(cards)
    if eng.held_log:
        held = Section(
            "Held cards (PT-2001 r.18): where they finally went", ["card", "went to"], cards_column=0
        )
        held.rows = [[h["card"], _where(h["recipient"], split)] for h in eng.held_log]
        rep.sections.append(held)
    dec = Section("Decisions", ["after card #", "hand", "player", "decision"])
    for d in desc["decisions"]:
        what = (
            words(ACTION_WORDS, d["action"])
            + (f" {amount(d['amount'])}" if "amount" in d else "")
            + (" (implicit)" if d.get("implicit") else "")
        )
        who = hand_label(d["seat"], d.get("hand", 0), d["seat"] in split)
        dec.rows.append([str(d.get("after_cards", "")), who, str(d.get("player", "")), what])
    rep.sections.append(_drop_empty(dec, "player"))
    dealer = Section("Dealer's hand", ["cards", "total", ""], cards_column=0)
    state = "blackjack" if s.dealer_blackjack else ("bust" if s.dealer_bust else "")
    dealer.rows.append([" ".join(s.dealer_cards), str(s.dealer_total), state])
    rep.sections.append(dealer)
    hands = Section("Hands", ["hand", "cards", "total", "stake", "result", "net"], cards_column=1)
    for h in s.hands:
        stake = amount(h.stake) + (" (doubled)" if h.doubled else "")
        hands.rows.append([hand_label(h.seat, h.hand, h.seat in split), " ".join(h.cards), str(h.total), stake,
                           words(OUTCOME_WORDS, h.outcome), money(h.net)])  # fmt: skip
    rep.sections.append(hands)
    if s.co_bets:
        co = Section("Other players' bets on a seat (PT-2001 r.15-16)", ["hand", "player", "stake",
                                                                          "result", "net"])  # fmt: skip
        co.rows = [
            [hand_label(c.seat, c.hand, c.seat in split), c.player, amount(c.stake), words(OUTCOME_WORDS, c.outcome),
             money(c.net)] for c in s.co_bets
        ]  # fmt: skip
        co.rows += [[f"Seat {x['seat']}", str(x["player"]), amount(x.get("stake", x.get("amount", ""))),
                     f"{x['kind']} {x.get('name') or ''} {x.get('result') or ''}".strip(), money(x["net"])]
                    for x in s.co_side_bets]  # fmt: skip
        rep.sections.append(co)
    if s.insurance:
        ins = Section("Insurance", ["seat", "amount", "dealer blackjack", "net"])
        ins.rows = [
            [str(i.seat), amount(i.amount), "yes" if i.won else "no", money(i.net)] for i in s.insurance
        ]
        rep.sections.append(ins)
    if s.side_bets:
        side = Section("Side bets", ["seat", "bet", "stake", "result", "net"])
        side.rows = [
            [str(b.seat), b.name, amount(b.stake), b.result or "lost", money(b.net)] for b in s.side_bets
        ]
        rep.sections.append(side)
    if s.prizes:
        prizes = Section("Special prizes", ["hand", "prize", "net"])
        prizes.rows = [[hand_label(x.seat, x.hand, x.seat in split), x.name, money(x.net)] for x in s.prizes]
        rep.sections.append(prizes)
    if s.jackpot:
        jp = Section(
            "Jackpot (PT-2001 r.42-43)", ["seat", "player", "first cards", "combination"], cards_column=2
        )
        for j in s.jackpot:
            combo = evaluate(j["first_cards"], eng.profile.jackpot_different_suits)
            who = j.get("player") or "seat holder"
            jp.rows.append(
                [str(j["seat"]), who, " ".join(j["first_cards"]), _JACKPOT_WORDS[combo] if combo else "none"]
            )
        rep.sections.append(_drop_empty(jp, "player"))
    errs = Section("Dealer errors", ["rule", "card", "what happened", "remedy"], cards_column=1)
    for e in eng.dealer_errors:
        errs.rows.append(
            [
                e.rule,
                str(e.card or ""),
                _unsplit(in_words(e.message), split),
                _remedy(e, desc["cards"], why, eng.held_log, split),
            ]
        )
    if not errs.rows:
        errs.rows.append(["", "", "none", ""])
    rep.sections.append(errs)
    totals = Section("Result (net for the players; the house's is the opposite)", ["seat", "net"])
    totals.rows = [[str(k), money(v)] for k, v in s.seat_nets.items()] + [["total", money(s.total_net)]]
    rep.sections.append(totals)
    return rep


def _note(rep: Report, doc: Any) -> None:
    if isinstance(doc, dict) and isinstance(doc.get("comment"), str) and doc["comment"]:
        rep.sections.append(Section("Note written in the file", ["comment"], [[doc["comment"][:2000]]]))


def _bets(eng: Any) -> Section:
    sec = Section("Bets", ["seat", "player", "amount", "side bets", "jackpot chip"])
    for seat, st in eng.seats.items():
        for bet in [st.bet, *(cb.bet for cb in st.co_bets)]:
            side = ", ".join(f"{k} {amount(v)}" for k, v in bet.side_bets.items())
            sec.rows.append(
                [str(seat), bet.player or "", amount(bet.amount), side, "yes" if bet.jackpot_chip else ""]
            )
    return sec


def _bets_from_doc(doc: dict[str, Any]) -> Section:
    sec = Section("Bets (as written in the file)", ["entry"])
    sec.rows = [[json.dumps(b, ensure_ascii=False)[:200]] for b in doc["bets"][:50]]
    return sec


def _remedy(
    err: Any, cards: list[dict[str, Any]], why: list[str], held: list[dict[str, Any]], split: frozenset[Any]
) -> str:
    for c, reason in zip(cards, why, strict=True):
        if err.card is not None and c["card"] == str(err.card) and err.message in reason:
            to = c["recipient"]
            if to == "void":
                return "void: does not count, to the discard"
            if to == "held":
                later = next((h["recipient"] for h in held if h["card"] == c["card"]), "void")
                return (
                    f"held, then given to {_where(later, split)}" if later != "void" else "held, finally void"
                )
            return f"corrected: the card went to {_where(to, split)}"
    return "see the card's line"


# ------------------------------------------------------------------ rendering


def text(rep: Report) -> str:
    out = [rep.title, "=" * min(len(rep.title), 100), rep.verdict, ""]
    for sec in rep.sections:
        out.append(sec.title)
        widths = [len(c) for c in sec.columns]
        rows = [
            [_faces(v.split()) if i == sec.cards_column else v for i, v in enumerate(row)] for row in sec.rows
        ]
        for row in rows:
            widths = [max(w, len(v)) for w, v in zip(widths, row, strict=False)]
        widths = [min(w, 60) for w in widths]
        out.append("  " + "  ".join(c.ljust(w) for c, w in zip(sec.columns, widths, strict=True)).rstrip())
        for row in rows:
            out.append("  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=False)).rstrip())
        out.append("")
    return "\n".join(out)


def _card_html(code: str) -> str:
    """A card picture: rank and suit symbol in a bordered box (Unicode, no external resources)."""
    try:
        card = Card.parse(code)
    except ValueError:
        return f'<span class="card bad">{html.escape(code)}</span>'
    rank = "10" if card.rank == "T" else card.rank
    colour = "red" if card.suit in RED_SUITS else "black"
    return f'<span class="card {colour}" title="{html.escape(card_face(code))}">{rank}{SUIT_SYMBOLS[card.suit]}</span>'


def _cell(value: str, cards: bool) -> str:
    if cards and value:
        return " ".join(_card_html(c) for c in value.split())
    return html.escape(value)


_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#111}
h1{font-size:1.3em;margin-top:2em}h2{font-size:1.05em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin-bottom:.5em}td,th{border:1px solid #bbb;padding:2px 8px;text-align:left}
.verdict.ok{color:#060}.verdict.bad{color:#a00;font-weight:bold}
.card{display:inline-block;min-width:2.1em;padding:2px 3px;margin:1px;border:1px solid #444;border-radius:4px;
background:#fff;text-align:center;font-weight:bold}
.card.red{color:#c00}.card.black{color:#000}.card.bad{color:#a00;border-style:dashed}
"""


def html_page(
    reports: list[Report],
    *,
    heading: str = "Round dispute report (PT-2001 r.62)",
    back: tuple[str, str] | None = None,
) -> str:
    """The reports as one page; ``back``: (a relative link, its words) to the page it was opened from."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{html.escape(heading)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(heading)}</h1>",
    ]
    if back is not None:
        parts.append(f'<p><a href="{html.escape(back[0], quote=True)}">{html.escape(back[1])}</a></p>')
    for rep in reports:
        parts.append(f"<section><h1>{html.escape(rep.title)}</h1>")
        cls = "ok" if rep.ok else "bad"
        parts.append(f'<p class="verdict {cls}">{html.escape(rep.verdict)}</p>')
        for sec in rep.sections:
            parts.append(f"<h2>{html.escape(sec.title)}</h2><table><tr>")
            parts.extend(f"<th>{html.escape(c)}</th>" for c in sec.columns)
            parts.append("</tr>")
            for row in sec.rows:
                cells = "".join(f"<td>{_cell(v, i == sec.cards_column)}</td>" for i, v in enumerate(row))
                parts.append(f"<tr>{cells}</tr>")
            parts.append("</table>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------ agreement with the journal

_COMPARED = (
    "dealer_cards",
    "dealer_total",
    "hands",
    "co_bets",
    "co_side_bets",
    "insurance",
    "side_bets",
    "prizes",
    "seat_nets",
    "total_net",
)


_COMPARED_WORDS = {
    "dealer_cards": "dealer's cards",
    "dealer_total": "dealer's total",
    "hands": "hands",
    "co_bets": "other players' bets",
    "co_side_bets": "other players' side bets",
    "insurance": "insurance",
    "side_bets": "side bets",
    "prizes": "special prizes",
    "seat_nets": "net per seat",
    "total_net": "total net for the players",
}


def differences(replayed: dict[str, Any], recorded: Any) -> list[str]:
    """Where the replayed settlement differs from the one the journal recorded (both as JSON)."""
    if not isinstance(recorded, dict):
        return ["the journal has no settlement for this round"]
    a = json.loads(json.dumps(replayed, default=str))
    b = json.loads(json.dumps(recorded, default=str))
    out = []
    for key in _COMPARED:
        if a.get(key) != b.get(key):
            out.append(
                f"{_COMPARED_WORDS[key]}: journal {_short(b.get(key), key)}, replay {_short(a.get(key), key)}"
            )
    return out


def _short(value: Any, key: str = "") -> str:
    if key == "total_net" and isinstance(value, int) and not isinstance(value, bool):
        return money(value)  # an amount: in money; the other fields as the journal holds them
    text_ = json.dumps(value, ensure_ascii=False, default=str)
    return text_ if len(text_) <= 120 else text_[:117] + "..."
