"""What the pit terminal draws in each part of its screen, from one snapshot of what the app holds (the retained
documents, the connection, the selection, the last settlement): pure functions, no Textual widget, so the app
(pit.py) only puts each part where it belongs. The panels themselves are pit_panels.py and pit_summary.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from controller.plain import clean
from controller.terminal.pit_dealer import chips_within
from controller.terminal.pit_keys import DEALER_KEYS, hint_keys
from controller.terminal.pit_panels import (
    alerts_panel,
    banner_text,
    currency_of,
    deck_check_text,
    entry_line,
    last_round_panel,
    pending_hits,
    round_panel,
    shoe_panel,
)
from controller.terminal.pit_summary import alert_summary, settled_summary
from controller.terminal.view import DealerResults, enabled_inputs, next_hint
from controller.words import money


@dataclass(frozen=True)
class PitSnapshot:
    """What the screen is drawn from at one refresh. ``states``: the retained ``state/<name>`` documents."""

    states: dict[str, Any]
    connected: bool
    status: str  # the controller's ``status``: online | offline | unknown
    why: str  # the last connection failure ("" once connected)
    alerts_open: list[Any]
    prefix: str
    seats: int
    demo: bool
    seat: int
    chip: int
    compact: bool  # a short terminal: the round compact, one banner line
    burnt: dict[str, list[str]]  # round id -> the burn cards seen (events/card)
    last_settlement: dict[str, Any]  # the last events/settlement
    results: DealerResults
    supervisor: bool = True  # this terminal has a supervisor channel (--supervisor-account)
    bet_so_far: int = 0  # the selected seat's bet this terminal last asked for, else the one shown
    deck_check: dict[str, Any] | None = None  # the last events/deck_check (PT-2001 r.55)

    def doc(self, name: str) -> dict[str, Any]:
        """A retained state document, or {} if none has arrived (or it is not an object)."""
        value = self.states.get(name)
        return value if isinstance(value, dict) else {}

    @property
    def enabled(self) -> set[str]:
        """The dealer inputs the table accepts now (``state/table`` ``dealer_inputs``, view.py)."""
        return enabled_inputs(self.status, self.connected, self.doc("table"))

    @property
    def currency(self) -> str | None:
        return currency_of(self.doc("jackpot"))

    def seat_bet(self) -> Any:
        """The selected seat's bet: while betting from state/table, during a round each hand's stake from
        state/round (a list: what the seat's rows show, a double or a split included)."""
        bets = self.doc("table").get("bets")
        held = bets.get(str(self.seat)) if isinstance(bets, dict) else None
        if isinstance(held, dict):
            return held.get("amount")
        seats = self.doc("round").get("seats") or []
        mine = next((s for s in seats if isinstance(s, dict) and s.get("seat") == self.seat), None)
        if mine is None:
            return None
        hands = [h for h in mine.get("hands") or [] if isinstance(h, dict)]
        return [h.get("stake", mine.get("bet")) for h in hands] or mine.get("bet")


def banner(s: PitSnapshot) -> Text:
    return banner_text(connected=s.connected, status=s.status, prefix=s.prefix, table=s.doc("table"),
                       sw=s.doc("software"), jackpot=s.doc("jackpot"), why=s.why, compact=s.compact)  # fmt: skip


def round_part(s: PitSnapshot) -> Any:
    keys = {a: k for a, (k, _) in DEALER_KEYS.items()}  # the "allowed" line: those the table accepts now
    return round_panel(s.doc("table"), s.doc("round"), s.burnt, enabled=s.enabled, keys=keys,
                       currency=s.currency, compact=s.compact)  # fmt: skip


def last_round(s: PitSnapshot) -> Text:
    return last_round_panel(s.last_settlement, s.currency)


def summary(s: PitSnapshot) -> Text:
    """Seen at every size: the last settlement's net per seat, the open alerts (count, most severe) and, from
    the closing until the next session, the deck check's result."""
    lines = [
        settled_summary(s.last_settlement, s.currency),
        alert_summary(s.alerts_open, hint_keys()["ack_alert"]),
    ]
    if s.deck_check and s.doc("table").get("state") in ("closing", "closed", "deck_check_failed", "loading"):
        text, style = deck_check_text(
            s.deck_check
        )  # the closing's result (PT-2001 r.55), until the next session
        lines.append(Text(f"At closing, {text}", style=style))
    return Text("\n").join(lines)


def shoe(s: PitSnapshot) -> Text:
    return shoe_panel(shoe=s.doc("shoe"), lid=s.doc("lid"), jam=s.doc("jam"), table=s.doc("table"),
                      jackpot=s.doc("jackpot"), have_jackpot="jackpot" in s.states,
                      hits=pending_hits(s.doc("jackpot")), results=s.results,
                      deck_check=s.deck_check)  # fmt: skip


def alerts(s: PitSnapshot) -> Text:
    return alerts_panel(s.alerts_open)


def entry(s: PitSnapshot) -> Text:
    return entry_line(seat=s.seat, seats=s.seats, bet=s.seat_bet(), chip=s.chip,
                      chips=chips_within(s.doc("table").get("limits")), currency=s.currency,
                      players=s.doc("players") if "players" in s.states else None)  # fmt: skip


def hint(s: PitSnapshot) -> Text:
    text = next_hint(
        status=s.status if s.connected else "unreachable",
        table=s.doc("table"), rnd=s.doc("round"), shoe=s.doc("shoe"), jam=s.doc("jam"), lid=s.doc("lid"),
        enabled=s.enabled, keys=hint_keys(), demo=s.demo, seat=s.seat, chip=money(s.chip), seats=s.seats,
        bet=s.bet_so_far, chip_amount=s.chip, supervisor=s.supervisor,
        seated=isinstance(at := s.doc("players").get("seats"), dict) and str(s.seat) in at,
    )  # fmt: skip
    return Text(f"next: {clean(text, 200)}")


# widget id -> what is drawn in it, top to bottom (pit_layout.py places the widgets)
PARTS: dict[str, Callable[[PitSnapshot], Any]] = {
    "#banner": banner,
    "#round": round_part,
    "#lastround": last_round,
    "#summary": summary,
    "#shoe": shoe,
    "#alerts": alerts,
    "#entry": entry,
    "#hint": hint,
}
