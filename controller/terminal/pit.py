"""The dealer pit terminal (Textual): the live table and the dealer's inputs, over MQTT only.

Everything shown comes from the controller's retained documents and events (docs/mqtt.md); every input is a
command on ``cmd/dealer`` (plain, the broker ACL guards it) or, behind the credential prompt, a signed command
on ``cmd/supervisor`` through a second connection with a supervisor account. A refused input shows the
controller's reason. Keys and the credential prompt: docs/terminal.md.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from rich import box
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalGroup, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Static

from controller.client import CommandFailed, Event, TableClient
from controller.terminal.credentials import Credential, CredentialScreen
from controller.terminal.plain import clean, plain
from controller.terminal.view import (
    ACTION_WORDS,
    BETTING_INPUTS,
    PHASE_WORDS,
    PLAY_INPUTS,
    ROUND_END_INPUTS,
    STATE_WORDS,
    STATUS_WORDS,
    UNKNOWN,
    DealerResults,
    card_text,
    enabled_inputs,
    hand_label,
    hand_text,
    lid_text,
    money,
    money_in_text,
    next_hint,
    settlement_lines,
    turn_text,
    words,
)

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
    "decline_insurance": ("o", "No insurance"),
    "even_money": ("e", "Even money"),
    "five_card": ("f", "Five cards"),  # MO-2004 art.19
    "next_round": ("g", "Next round"),
    "cut": ("t", "Cut"),  # batch shoe only (PT-2001 r.8)
}
# supervisor action -> (key, label, argument prompt or None)
SUPERVISOR_KEYS: dict[str, tuple[str, str, str | None]] = {
    "open_table": ("f2", "Open table", "rule profile"),
    "close_table": ("f3", "Close table", None),
    "clear_jam": ("f4", "Clear jam", None),
    "unlock_lid": ("f5", "Unlock lid", None),
    "lock_lid": ("f6", "Lock lid", None),
    "jackpot_verify": ("f7", "JP verify", "jackpot hit id"),
    "jackpot_pay": ("f8", "JP pay", "jackpot hit id"),
    "ack_alert": ("f9", "Ack alerts", "alert ids (comma separated, empty = all open)"),
    "ack_deck_check": ("f10", "Deck ack", None),
    "clear_link": ("f12", "Clear link", None),  # once the link is back (F11: fullscreen in most terminals)
}
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
CHIPS = (100, 500, 1000, 2500, 5000, 10000, 50000, 100000)
BUTTON_WIDTH = 17  # one button's cell in the key grid; the grid has as many columns as fit
_PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


@dataclass(frozen=True)
class TableRules:
    """What the table's rule profile allows, for the buttons and the chip selector (unknown: everything)."""

    inputs: frozenset[str]
    min_bet: int | None = None
    max_bet: int | None = None
    book: str | None = None


ALL_RULES = TableRules(frozenset(DEALER_KEYS))


@lru_cache(maxsize=16)
def table_rules(profile: str | None) -> TableRules:
    """The dealer inputs a rule profile can ever allow (PT-2001 has no five-card rule, MO-2004 art.19 has) and
    its bet limits. The name comes from MQTT: only a plain profile name is looked up among the shipped
    profiles; anything else (or a profile that does not load) is 'unknown' and every button stays."""
    if not isinstance(profile, str) or not _PROFILE_NAME.match(profile):
        return ALL_RULES
    from controller.rules.profiles import ProfileError, load_profile

    try:
        p = load_profile(profile)
    except (ProfileError, OSError, ValueError):
        return ALL_RULES
    inputs = {"place_bet", "clear_bet", "no_more_bets", "hit", "stand", "split", "next_round", "cut"}
    if p.play.double != "none":
        inputs.add("double")
    if p.play.surrender:
        inputs.add("surrender")
    if p.play.five_card_rule:
        inputs.add("five_card")
    if p.insurance.offered:
        inputs |= {"insurance", "decline_insurance"}
        if p.insurance.even_money:
            inputs.add("even_money")
    if p.jackpot_allowed:
        inputs.add("jackpot_chip")
    return TableRules(frozenset(inputs), p.min_bet, p.max_bet, p.book)


class DemoHardware(Protocol):
    """`tablectl demo` only (tablebench/demo.py; development tooling, never on a Pi): the emulated shoe and the
    fake GPIO board, so keys stand in for the dealer's hands (docs/terminal.md). The product has none."""

    chip_sensor: bool  # a jackpot chip can be sensed on a seat (the fake GPIO board is reachable)

    async def connect(self) -> Any:
        """The emulated shoe's control: draw, insert, close_lid, state, jam, clear_jam, unreadable
        (docs/emulator.md)."""

    async def close(self) -> None: ...

    async def sense_chip(self, seat: int) -> None:
        """A chip into the seat's slot, the slot emptied first (PT-2001 r.41a)."""


@dataclass
class PitConnection:
    """Where the terminal connects. ``demo`` is set by `tablectl demo` only: the emulated hardware, so a key
    can stand in for the dealer pulling a card (docs/emulator.md ``draw``)."""

    host: str
    port: int
    user: str
    password: str
    prefix: str
    supervisor_account: str | None = None
    supervisor_password: str | None = None
    demo: DemoHardware | None = None
    floor_console: str | None = None  # demo: the command line that attaches the floor alert console
    profile: str = "pt-2001"
    seats: int = 7
    key_dir: str | None = None  # the users' PIN-encrypted key files (default: $TABLECTL_KEY_DIR)


def _bindings() -> list[Binding]:
    keys = [Binding(str(n), f"seat({n})", f"seat {n}", show=False) for n in range(1, 10)]
    keys += [
        Binding("left_square_bracket", "chip(-1)", "chip -", show=False),
        Binding("right_square_bracket", "chip(1)", "chip +", show=False),
    ]
    keys += [Binding(k, f"dealer('{a}')", label, show=False) for a, (k, label) in DEALER_KEYS.items()]
    keys += [
        Binding(k, f"supervisor('{a}')", label, show=False) for a, (k, label, _) in SUPERVISOR_KEYS.items()
    ]
    keys += [Binding(k, f"demo('{a}')", label, show=False) for a, (k, label) in DEMO_KEYS.items()]
    keys.append(Binding("q", "quit", "Quit"))
    return keys


class PitApp(App[None]):
    TITLE = "tablectl pit terminal"
    BINDINGS = _bindings()
    CSS = """
    #body { height: 1fr; }
    #banner { height: auto; padding: 0 1; background: $primary-darken-2; }
    #banner.offline { background: $error; }
    #main { height: 1fr; }
    #panels { height: auto; }
    #left { width: 3fr; height: auto; }
    #right { width: 2fr; height: auto; }
    #body.narrow #panels { layout: vertical; }
    #body.narrow #left, #body.narrow #right { width: 1fr; }
    #legend { display: none; height: auto; padding: 0 1; color: $warning; }
    #body.short #legend { display: block; }
    #body.short #supervisor-buttons { display: none; }
    .panel { border: round $secondary; padding: 0 1; height: auto; }
    #round { height: auto; min-height: 6; }
    #entry { height: auto; padding: 0 1; }
    #hint { height: auto; padding: 0 1; background: $boost; text-style: bold; }
    #message { height: auto; padding: 0 1; }
    #message.refused { color: $error; }
    .buttons { layout: grid; grid-size: 4; grid-rows: 1; grid-gutter: 0 1; height: auto; padding: 0 1; }
    .buttons Button { width: 100%; min-width: 0; }
    .buttons Button.allowed { background: $success; color: $text; text-style: bold; }
    """

    def __init__(self, conn: PitConnection) -> None:
        super().__init__()
        self.conn = conn
        self.client = TableClient(conn.host, conn.port, username=conn.user, password=conn.password,
                                  prefix=conn.prefix)  # fmt: skip
        self.sup_client: TableClient | None = None
        if conn.supervisor_account and conn.supervisor_password is not None:
            self.sup_client = TableClient(conn.host, conn.port, username=conn.supervisor_account,
                                          password=conn.supervisor_password, prefix=conn.prefix,
                                          key_dir=conn.key_dir)  # fmt: skip
        self.seat = 1
        self.chip = 1000
        self.results = DealerResults()
        self.last_settlement: dict[str, Any] = {}
        self.burnt: dict[str, list[str]] = {}  # round id -> burn cards seen (events/card), newest round only
        # seat -> the bet this terminal last asked for and the controller has not shown yet: a second 'b'
        # pressed before state/table caught up adds to it (0: a clear is on its way)
        self._sent_bets: dict[int, int] = {}
        self.message = ""
        self._control: Any = None  # the emulated shoe's control in the demo (DemoHardware.connect)
        self._dirty = True

    # ---- layout ----
    def compose(self) -> ComposeResult:
        """Top to bottom: banner, the table (scrolls when the terminal is small: nothing is cut off), the next
        useful key, the selection, the dealer's buttons, the supervisor's keys (buttons, or one legend on a
        short terminal), the last answer. Narrow terminals stack the panels instead of side by side."""
        with Vertical(id="body"):
            yield Static("connecting…", id="banner")
            with VerticalScroll(id="main"), Horizontal(id="panels"):
                with Vertical(id="left"):
                    yield Static("", id="round", classes="panel")
                    yield Static("", id="lastround", classes="panel")
                with Vertical(id="right"):
                    yield Static("", id="shoe", classes="panel")
                    yield Static("", id="alerts", classes="panel")
            yield Static("", id="hint")
            yield Static("", id="entry")
            with HorizontalGroup(classes="buttons", id="dealer-buttons"):
                for action, (key, label) in DEALER_KEYS.items():
                    yield Button(f"{label} ({key})", id=f"in-{action}", disabled=True, compact=True)
            with HorizontalGroup(classes="buttons", id="supervisor-buttons"):
                for action, (key, label, _) in SUPERVISOR_KEYS.items():
                    yield Button(
                        f"{label} ({key.upper()})", id=f"sv-{action}", variant="warning", compact=True
                    )
                if self.conn.demo is not None:
                    for action, (key, label) in DEMO_KEYS.items():
                        if action != "chip" or self.conn.demo.chip_sensor:
                            yield Button(
                                f"{label} ({key})", id=f"demo-{action}", variant="success", compact=True
                            )
            yield Static(self._legend(), id="legend")
            if self.conn.floor_console:
                yield Static(Text(f"floor console: {clean(self.conn.floor_console, 300)}"), id="attach")
            yield Static("", id="message")
        yield Footer()

    def _legend(self) -> Text:
        keys = "  ".join(f"{k.upper()} {label}" for k, label, _ in SUPERVISOR_KEYS.values())
        demo = (
            "  ·  demo: " + "  ".join(f"{k} {label.lower()}" for k, label in DEMO_KEYS.values())
            if self.conn.demo is not None
            else ""
        )
        return Text(f"Supervisor (user + PIN): {keys}{demo}  ·  q quit")

    def on_mount(self) -> None:
        self.client.on_change.append(self._on_change)
        self.run_worker(self._connect(), exclusive=False)
        self.set_interval(0.25, self._tick)
        self._fit(self.size.width, self.size.height)

    def on_resize(self, event: Any) -> None:
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        """As many button columns as fit the width (at 80 columns no label is cut); below 100 columns the
        panels stack; below 32 rows the supervisor keys are one legend line instead of buttons."""
        columns = max(2, min(8, (width - 2) // BUTTON_WIDTH))
        for group in self.query(".buttons"):
            group.styles.grid_size_columns = columns
        with contextlib.suppress(Exception):  # before compose has run
            body = self.query_one("#body")
            body.set_class(width < 100, "narrow")
            body.set_class(height < 32, "short")
            self.query_one(Footer).display = height >= 32

    async def _connect(self) -> None:
        clients = [c for c in (self.client, self.sup_client) if c is not None]
        for client in clients:
            with contextlib.suppress(TimeoutError, OSError):
                await client.connect(timeout=5)  # paho keeps retrying in the background if it timed out
        if self.conn.demo is not None:
            self._control = await self.conn.demo.connect()
        self._dirty = True

    async def on_unmount(self) -> None:
        for client in (self.client, self.sup_client):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()
        if self.conn.demo is not None:
            with contextlib.suppress(Exception):
                await self.conn.demo.close()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "demo":  # demo keys exist only against the emulated shoe (and the fake GPIO board)
            demo = self.conn.demo
            return demo is not None and (parameters[:1] != ("chip",) or demo.chip_sensor)
        return True

    # ---- model updates ----
    def _on_change(self, event: Event | None) -> None:
        if event is not None and event.topic == "events/settlement" and isinstance(event.data, dict):
            self.results.add(event.data)
            self.last_settlement = event.data
        elif event is not None and event.topic == "events/card" and _is_burn(event.data):
            rid = str(event.data.get("round_id"))
            if rid not in self.burnt:
                self.burnt = {rid: []}  # only the current round's burn cards are shown
            self.burnt[rid].append(str(event.data.get("code", "??")))
        self._dirty = True

    def _tick(self) -> None:
        connected = self.client.connected
        if connected != getattr(self, "_was_connected", None):
            self._was_connected = connected
            self._dirty = True
        if self._dirty:
            self._dirty = False
            self.refresh_view()

    # ---- rendering ----
    @property
    def online(self) -> bool:
        return self.client.connected and self.client.view.status == "online"

    def doc(self, name: str) -> dict[str, Any]:
        """A retained state document, or {} if none has arrived (or it is not an object)."""
        value = self.client.view.states.get(name)
        return value if isinstance(value, dict) else {}

    @property
    def rules(self) -> TableRules:
        return table_rules(self.doc("table").get("profile") or self.doc("software").get("profile"))

    def chips(self) -> tuple[int, ...]:
        """The chip denominations the selector offers: never above the table maximum nor below its minimum."""
        rules, limits = self.rules, self.doc("table").get("limits")
        lo, hi = rules.min_bet or 0, rules.max_bet or CHIPS[-1]
        if isinstance(limits, dict):  # the table's own limits (its configuration may narrow the profile's)
            lo = limits["min_bet"] if isinstance(limits.get("min_bet"), int) else lo
            hi = limits["max_bet"] if isinstance(limits.get("max_bet"), int) else hi
        return tuple(c for c in CHIPS if lo <= c <= hi) or (lo or CHIPS[0],)

    def refresh_view(self) -> None:
        """Every value from outside goes through controller/terminal/plain.py (text, never markup); a panel whose
        document cannot be shown says so instead of stopping the terminal."""
        for name, render in (
            ("#banner", self._banner),
            ("#round", self._round_panel),
            ("#lastround", self._last_round_panel),
            ("#shoe", self._shoe_panel),
            ("#alerts", self._alerts_panel),
            ("#entry", self._entry_line),
            ("#hint", self._hint_line),
        ):
            try:
                content: Any = render()
            except Exception as exc:  # a malformed document: shown as such, never a crash
                content = plain(f"(cannot show this part: {type(exc).__name__}: {exc})", style="red")
            self.query_one(name, Static).update(content)
        enabled = self.enabled()
        shown = self.rules.inputs
        jackpot = self.doc("jackpot")
        for action in DEALER_KEYS:
            button = self.query_one(f"#in-{action}", Button)
            # only what the profile can ever allow; no jackpot chip key where the chips are sensed (r.41a)
            visible = action in shown and not (action == "jackpot_chip" and jackpot.get("mode") != "manual")
            if action == "cut":  # only a batch shoe is cut (PT-2001 r.8)
                visible = (
                    self.doc("table").get("shuffler") == "batch" or self.doc("table").get("state") == "cut"
                )
            button.display = visible
            button.disabled = action not in enabled
            button.set_class(action in enabled, "allowed")
        self._forget_confirmed_bets()
        if self.chip not in self.chips():
            self.chip = min(self.chips(), key=lambda c: abs(c - self.chip))
        msg = self.query_one("#message", Static)
        msg.update(plain(self.message, 400))
        msg.set_class(self.message.startswith("refused"), "refused")

    def enabled(self) -> set[str]:
        view = self.client.view
        return enabled_inputs(view.status, self.client.connected, self.doc("table"))

    def _banner(self) -> Text:
        view = self.client.view
        table, sw = self.doc("table"), self.doc("software")
        banner = self.query_one("#banner", Static)
        offline = not self.client.connected or view.status != "online"
        banner.set_class(offline, "offline")
        if not self.client.connected:
            top = Text("BROKER UNREACHABLE — showing the last known state; inputs disabled; reconnecting…")
        elif view.status != "online":
            status = "status unknown" if view.status == "unknown" else clean(view.status, 20).upper()
            top = Text(f"CONTROLLER {status} — inputs disabled until it is online")
        else:
            top = Text.assemble(
                f"{clean(self.conn.prefix.rsplit('/', 1)[-1], 40)} · controller online · ",
                (clean(words(STATE_WORDS, table.get("state")), 40) if table else UNKNOWN, "bold"),
                f" · session {clean(table.get('session_id') or ('none' if table else UNKNOWN), 40)}",
            )
        # state/software (the service publishes it, retained): unknown until it arrives
        software = Text(
            f"software {clean(sw.get('version') or UNKNOWN, 30)} · profile "
            f"{clean(sw.get('profile') or table.get('profile') or UNKNOWN, 40)} · rule book "
            f"{clean(sw.get('rule_book') or UNKNOWN, 40)}"
        )
        if self.doc("jackpot").get("meter") is not None:  # the meter as it increments, seen at any size
            software.append(f" · jackpot {money(self.doc('jackpot').get('meter'))}", style="bold")
        return Text("\n").join([top, software])

    def _round_panel(self) -> Table:
        table, rnd = self.doc("table"), self.doc("round")
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
        burnt = self.burnt.get(str(rnd.get("round_id")), [])
        if burnt:
            grid.add_row(plain("Burnt"), plain(""), plain(" ".join(card_text(c) for c in burnt), 80),
                         plain("burn card" + ("s" if len(burnt) > 1 else "")))  # fmt: skip
        split = any(len(s.get("hands") or []) > 1 for s in seats)
        allowed = ", ".join(words(ACTION_WORDS, a) for a in rnd.get("allowed_actions") or []) or "—"
        grid.caption = Text(
            clean(f"turn: {turn_text(rnd.get('turn'), split or None)}  ·  allowed: {allowed}", 200)
        )
        return grid

    def _last_round_panel(self) -> Text:
        return Text("Last round\n", style="bold") + Text(
            "\n".join(clean(line, 200) for line in settlement_lines(self.last_settlement))
        )

    def _shoe_panel(self) -> Text:
        shoe, lid, jam = self.doc("shoe"), self.doc("lid"), self.doc("jam")
        table, jackpot = self.doc("table"), self.doc("jackpot")
        have_shoe, have_jackpot = bool(shoe), "jackpot" in self.client.view.states

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
            _link_line(shoe.get("linked", True) if have_shoe else None, "link_down" in faults),
            (f"faults: {', '.join(faults) or 'none'}", "bold red" if table.get("faults") else ""),
            ("", ""),
            (f"Jackpot meter: {meter}", "bold"),
            (f"pending hits: {self._hits_text()}", ""),
            (f"Dealer's last results: {clean(self.results.text(), 120)}", "bold"),
        ]  # fmt: skip
        out = Text()
        for text, style in lines:
            out.append(text + "\n", style=style)
        return out

    def pending_hits(self) -> list[dict[str, Any]]:
        """Jackpot hits waiting for a supervisor to verify and pay them (PT-2001 r.49-50), from the retained
        ``state/jackpot``: a terminal started later still sees them."""
        hits = self.doc("jackpot").get("pending_hits") or []
        return [h for h in hits if isinstance(h, dict)] if isinstance(hits, list) else []

    def _hits_text(self) -> str:
        hits = self.pending_hits()
        if not hits:
            return "none"
        return "; ".join(
            clean(f"#{h.get('hit_id')} Seat {h.get('seat')} {h.get('combination')} {money(h.get('amount'))} "
                  f"{'verified' if h.get('verified') else 'to verify'}", 120)
            for h in hits[:5]
        )  # fmt: skip

    def _alerts_panel(self) -> Text:
        alerts = [a for a in self.client.view.alerts_open if isinstance(a, dict)]
        out = Text("Open alerts\n", style="bold")
        if not alerts:
            out.append("none\n")
        for a in alerts[-6:]:
            style = "bold red" if a.get("severity") == "critical" else ""
            out.append(clean(f"#{a.get('alert_id')} {a.get('kind')} {a.get('severity')}: {a.get('reason')}", 200)
                       + "\n", style=style)  # fmt: skip
        return out

    def seat_bet(self) -> Any:
        """The selected seat's bet: while betting from state/table, during a round from state/round."""
        bets = self.doc("table").get("bets")
        held = bets.get(str(self.seat)) if isinstance(bets, dict) else None
        if isinstance(held, dict):
            return held.get("amount")
        seats = self.doc("round").get("seats") or []
        return next((s.get("bet") for s in seats if isinstance(s, dict) and s.get("seat") == self.seat), None)

    def _entry_line(self) -> Text:
        chips = self.chips()
        bet = self.seat_bet()
        return Text.assemble(
            ("Seat ", "bold"), (str(self.seat), "bold"), f" (1-{self.conn.seats}) · bet ",
            money(bet) if bet is not None else "none", " · chip ", (money(self.chip), "bold"),
            f" ([ ] {money(chips[0])}-{money(chips[-1])}) · x clears",
        )  # fmt: skip

    def _hint_line(self) -> Text:
        hint = next_hint(
            status=self.client.view.status if self.client.connected else "unreachable",
            table=self.doc("table"), rnd=self.doc("round"), shoe=self.doc("shoe"), jam=self.doc("jam"),
            lid=self.doc("lid"), enabled=self.enabled(), keys={a: k for a, (k, _) in DEALER_KEYS.items()},
            demo=self.conn.demo is not None, seat=self.seat, chip=money(self.chip),
        )  # fmt: skip
        return Text(f"next: {clean(hint, 200)}")

    # ---- inputs ----
    def action_seat(self, seat: int) -> None:
        if 1 <= seat <= self.conn.seats:
            self.seat = seat
            self._dirty = True

    def action_chip(self, step: int) -> None:
        chips = self.chips()
        i = chips.index(self.chip) if self.chip in chips else 0
        self.chip = chips[max(0, min(len(chips) - 1, i + step))]
        self._dirty = True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if bid.startswith("in-"):
            self.action_dealer(bid[3:])
        elif bid.startswith("sv-"):
            self.action_supervisor(bid[3:])
        elif bid.startswith("demo-"):
            self.action_demo(bid[5:])

    def dealer_args(self, action: str) -> dict[str, Any]:
        rnd = self.doc("round")
        turn = rnd.get("turn") if isinstance(rnd.get("turn"), dict) else {}
        if action == "place_bet":  # the key adds the selected chip to the seat's bet (x clears it)
            current = self._sent_bets.get(self.seat, self._shown_bet(self.seat))
            return {"seat": self.seat, "amount": current + self.chip}
        if action in ("clear_bet", "jackpot_chip", "cut"):
            return {"seat": self.seat}
        if action in ("insurance", "decline_insurance", "even_money") and turn.get("seat"):
            args: dict[str, Any] = {"seat": turn["seat"]}
            if action == "insurance":  # insurance is half the main bet (PT-2001 r.26)
                bet = next(
                    (s.get("bet", 0) for s in rnd.get("seats") or [] if isinstance(s, dict)
                     and s.get("seat") == turn["seat"]), 0,
                )  # fmt: skip
                args["amount"] = int(bet) // 2 if isinstance(bet, int) else 0
            return args
        return {}

    def action_dealer(self, action: str) -> None:
        # Sent even when the button is disabled by a key: the controller decides and its reason is shown.
        if action not in (*BETTING_INPUTS, *PLAY_INPUTS, *ROUND_END_INPUTS, "cut"):
            return
        args = self.dealer_args(action)
        seat = self.seat
        if action in ("place_bet", "clear_bet"):
            self._sent_bets[seat] = args.get("amount", 0)
            self._run(words(ACTION_WORDS, action), lambda: self.client.dealer(action, **args),
                      on_refused=lambda: self._sent_bets.pop(seat, None))  # fmt: skip
            return
        self._run(words(ACTION_WORDS, action), lambda: self.client.dealer(action, **args))

    def _shown_bet(self, seat: int) -> int:
        """The seat's bet as the controller last published it (state/table, while betting)."""
        bets = self.doc("table").get("bets")
        held = bets.get(str(seat)) if isinstance(bets, dict) else None
        amount = held.get("amount") if isinstance(held, dict) else 0
        return amount if isinstance(amount, int) and not isinstance(amount, bool) else 0

    def _forget_confirmed_bets(self) -> None:
        if self.doc("table").get("state") != "betting":
            self._sent_bets.clear()
        for seat, amount in list(self._sent_bets.items()):
            if self._shown_bet(seat) == amount:
                self._sent_bets.pop(seat, None)

    def action_supervisor(self, action: str) -> None:
        if action not in SUPERVISOR_KEYS:
            return
        _, _, arg_label = SUPERVISOR_KEYS[action]
        default = self.conn.profile if action == "open_table" else ""
        if action == "ack_alert":
            default = ",".join(
                str(a.get("alert_id")) for a in self.client.view.alerts_open if isinstance(a, dict)
            )
        elif action.startswith("jackpot_") and self.pending_hits():
            default = str(self.pending_hits()[0].get("hit_id"))

        def done(cred: Credential | None) -> None:
            if cred is not None:
                self._supervisor_send(action, cred)

        self.push_screen(CredentialScreen(words(ACTION_WORDS, action), arg_label, default), done)

    def _supervisor_send(self, action: str, cred: Credential) -> None:
        sup = self.sup_client
        what = words(ACTION_WORDS, action)
        if sup is None:
            self._show(f"refused: {what}: this terminal has no supervisor channel (--supervisor-account)")
            return
        if action == "ack_alert":
            try:
                ids = [int(x) for x in cred.arg.replace(" ", "").split(",") if x]
            except ValueError:
                self._show(f"refused: {what}: alert ids must be whole numbers, got {cred.arg!r}")
                return
            ids = ids or [a["alert_id"] for a in self.client.view.alerts_open
                          if isinstance(a, dict) and isinstance(a.get("alert_id"), int)]  # fmt: skip

            async def ack_all() -> dict[str, Any]:
                for alert_id in ids:
                    await sup.supervisor(cred.user, cred.pin, "ack_alert", alert_id=alert_id)
                return {"acknowledged": ids}

            self._run(what, ack_all, by=cred.user)
            return
        args: dict[str, Any] = {}
        if action == "open_table":
            args["profile"] = cred.arg or self.conn.profile
        elif action.startswith("jackpot_"):
            if not cred.arg.isdigit():
                self._show(f"refused: {what}: the jackpot hit id must be a whole number, got {cred.arg!r}")
                return
            args["hit_id"] = int(cred.arg)
        self._run(what, lambda: sup.supervisor(cred.user, cred.pin, action, **args), by=cred.user)

    def action_demo(self, action: str) -> None:
        """Demo only: what the dealer's hands and the hardware do, on the emulated shoe and GPIO board."""
        ctl = self._control
        if ctl is None or action not in DEMO_KEYS:
            return
        label = DEMO_KEYS[action][1]
        if action == "draw":  # stands in for the dealer pulling a card out of the shoe
            self._run(label, lambda: ctl.draw(1))
        elif action == "machine":
            what, call = self._machine_step(ctl)
            self._run(what, call)
        elif action == "chip" and self.conn.demo is not None and self.conn.demo.chip_sensor:
            demo, seat = self.conn.demo, self.seat
            self._run(f"Jackpot chip sensed on Seat {seat}", lambda: demo.sense_chip(seat))
        elif action == "jam":
            self._run("Jam on the shoe's output (emulated)", lambda: ctl.jam("output"))
        elif action == "free":
            self._run("Jam freed on the device (emulated)", ctl.clear_jam)
        elif action == "damaged":
            self._run("The next card is damaged (unreadable)", lambda: ctl.unreadable(damaged=True))

    def _machine_step(self, ctl: Any) -> tuple[str, Callable[[], Awaitable[Any]]]:
        """The dealer at the machine, by what the table waits for: the round's cards in and the lid closed
        (PT-2001 r.59-60), the cards loaded in two packets (r.53-54), or every card out before a new session."""
        state = self.doc("table").get("state")
        lid = self.doc("lid").get("state")

        async def cards_in_and_close() -> None:
            await ctl.insert()
            await ctl.close_lid()

        async def load_two_packets() -> None:
            out = int((await ctl.state())["cards_out"])
            await ctl.insert(out // 2)
            await ctl.insert()
            await ctl.close_lid()

        async def cards_out() -> None:
            inside = int((await ctl.state())["cards_inside"])
            if inside:
                await ctl.draw(inside)

        if state == "loading":
            return "Cards loaded in two packets, lid closed", load_two_packets
        if state == "closed":
            return "Every card taken out of the machine", cards_out
        if lid == "open":
            return "Cards in, lid closed", cards_in_and_close
        return "Nothing to do at the machine now", _nothing

    def _run(
        self,
        what: str,
        call: Callable[[], Awaitable[Any]],
        by: str | None = None,
        on_refused: Callable[[], Any] | None = None,
    ) -> None:
        async def job() -> None:
            try:
                await call()
            except Exception as exc:  # refused, no answer, the emulator's socket: shown, never a crash
                if on_refused is not None:
                    on_refused()
                if isinstance(exc, CommandFailed):
                    self._show(f"refused: {what}: {money_in_text(exc.reason)}")
                elif isinstance(exc, TimeoutError):
                    self._show(f"refused: {what}: no answer from the controller (is it online?)")
                else:
                    self._show(f"refused: {what}: {exc}")
            else:
                self._show(f"ok: {what}" + (f" (by {by})" if by else ""))

        self.run_worker(job(), exclusive=False)

    def _show(self, message: str) -> None:
        self.message = clean(message, 400)
        self._dirty = True


async def _nothing() -> None:
    return None


def _is_burn(data: Any) -> bool:
    return isinstance(data, dict) and data.get("recipient") == "burn"


def _link_line(linked: Any, fault: bool) -> tuple[str, str]:
    """The shoe link: unknown (nothing reported yet), down, back but its fault not yet cleared (F12), or ok."""
    if linked is None:
        return (f"link: {UNKNOWN}", "")
    if not linked:
        return ("link: DOWN", "bold red")
    if fault:
        return ("link: back, fault raised: a supervisor clears it (F12)", "bold yellow")
    return ("link: ok", "")
