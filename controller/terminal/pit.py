"""The dealer pit terminal (Textual): the live table and the dealer's inputs, over MQTT only.

Everything shown comes from the controller's retained documents and events (docs/mqtt.md); every input is a
command on ``cmd/dealer`` (plain, the broker ACL guards it) or, behind the credential prompt, a signed command
on ``cmd/supervisor`` through a second connection with a supervisor account. A refused input shows the
controller's reason. Keys and the credential prompt: docs/terminal.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalGroup, Vertical
from textual.widgets import Button, Footer, Static

from controller.client import CommandFailed, Event, TableClient
from controller.terminal.credentials import Credential, CredentialScreen
from controller.terminal.view import (
    BETTING_INPUTS,
    PLAY_INPUTS,
    ROUND_END_INPUTS,
    DealerResults,
    enabled_inputs,
    hand_text,
    lid_text,
    money,
    settlement_lines,
    turn_text,
)

DEALER_KEYS: dict[str, tuple[str, str]] = {  # command -> (key, label)
    "place_bet": ("b", "Bet"),
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
CHIPS = (500, 1000, 2500, 5000, 10000, 50000)


@dataclass
class PitConnection:
    """Where the terminal connects. ``shoe_control`` is set by `tablectl demo` only: the emulated shoe's
    control socket, so a key can stand in for the dealer pulling a card (docs/emulator.md ``draw``)."""

    host: str
    port: int
    user: str
    password: str
    prefix: str
    supervisor_account: str | None = None
    supervisor_password: str | None = None
    shoe_control: str | None = None
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
    keys += [Binding("c", "draw", "draw card (demo)"), Binding("l", "lid_cycle", "cards in + lid (demo)")]
    keys.append(Binding("q", "quit", "Quit"))
    return keys


class PitApp(App[None]):
    TITLE = "tablectl pit terminal"
    BINDINGS = _bindings()
    CSS = """
    #banner { height: 1; padding: 0 1; background: $primary-darken-2; }
    #banner.offline { background: $error; }
    #main { height: 1fr; }
    #left { width: 2fr; }
    #right { width: 1fr; }
    .panel { border: round $secondary; padding: 0 1; height: auto; }
    #round { height: auto; min-height: 8; }
    #entry { height: 1; padding: 0 1; }
    #message { height: 1; padding: 0 1; }
    #message.refused { color: $error; }
    .buttons { layout: grid; grid-size: 7; grid-rows: 1; grid-gutter: 0 1; height: auto; padding: 0 1; }
    .buttons Button { width: 100%; min-width: 0; }
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
        self.message = ""
        self._control: Any = None  # drivers.emulator.control_client.ControlClient in the demo
        self._dirty = True

    # ---- layout ----
    def compose(self) -> ComposeResult:
        yield Static("connecting…", id="banner")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Static("", id="round", classes="panel")
                yield Static("", id="lastround", classes="panel")
            with Vertical(id="right"):
                yield Static("", id="shoe", classes="panel")
                yield Static("", id="alerts", classes="panel")
        yield Static("", id="entry")
        with HorizontalGroup(classes="buttons", id="dealer-buttons"):
            for action, (key, label) in DEALER_KEYS.items():
                yield Button(f"{label} ({key})", id=f"in-{action}", disabled=True, compact=True)
        with HorizontalGroup(classes="buttons", id="supervisor-buttons"):
            for action, (key, label, _) in SUPERVISOR_KEYS.items():
                yield Button(f"{label} ({key})", id=f"sv-{action}", variant="warning", compact=True)
            if self.conn.shoe_control:
                yield Button("Draw card (c)", id="demo-draw", variant="success", compact=True)
                yield Button("Cards in + lid (l)", id="demo-lid", variant="success", compact=True)
        yield Static("", id="message")
        yield Footer()

    def on_mount(self) -> None:
        self.client.on_change.append(self._on_change)
        self.run_worker(self._connect(), exclusive=False)
        self.set_interval(0.25, self._tick)

    async def _connect(self) -> None:
        clients = [c for c in (self.client, self.sup_client) if c is not None]
        for client in clients:
            with contextlib.suppress(TimeoutError, OSError):
                await client.connect(timeout=5)  # paho keeps retrying in the background if it timed out
        if self.conn.shoe_control:
            from drivers.emulator.control_client import ControlClient

            self._control = await ControlClient.connect(self.conn.shoe_control)
        self._dirty = True

    async def on_unmount(self) -> None:
        for client in (self.client, self.sup_client):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()
        if self._control is not None:
            with contextlib.suppress(Exception):
                await self._control.close()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("draw", "lid_cycle"):
            return bool(self.conn.shoe_control)  # demo keys exist only against the emulated shoe
        return True

    # ---- model updates ----
    def _on_change(self, event: Event | None) -> None:
        if event is not None and event.topic == "events/settlement":
            self.results.add(event.data)
            self.last_settlement = event.data
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

    def refresh_view(self) -> None:
        view = self.client.view
        table = view.states.get("table", {})
        rnd = view.states.get("round", {})
        banner = self.query_one("#banner", Static)
        if not self.client.connected:
            banner.update("BROKER UNREACHABLE — showing the last known state; inputs disabled; reconnecting…")
            banner.add_class("offline")
        elif view.status != "online":
            banner.update(f"CONTROLLER {view.status.upper()} — inputs disabled until it is back online")
            banner.add_class("offline")
        else:
            banner.remove_class("offline")
            banner.update(
                f"{self.conn.prefix}  ·  controller online  ·  state [b]{table.get('state', '?')}[/b]  ·  "
                f"profile {table.get('profile') or '—'}  ·  session {table.get('session_id') or '—'}"
            )
        self.query_one("#round", Static).update(self._round_panel(table, rnd))
        self.query_one("#lastround", Static).update(
            Text("Last round\n", style="bold") + Text("\n".join(settlement_lines(self.last_settlement)))
        )
        self.query_one("#shoe", Static).update(self._shoe_panel(view.states))
        self.query_one("#alerts", Static).update(self._alerts_panel(view.alerts_open))
        enabled = enabled_inputs(view.status, self.client.connected, table, rnd, view.states.get("jackpot"))
        for action in DEALER_KEYS:
            self.query_one(f"#in-{action}", Button).disabled = action not in enabled
        self.query_one("#entry", Static).update(
            f"selected seat [b]{self.seat}[/b] (keys 1-{self.conn.seats})  ·  chip [b]{money(self.chip)}[/b] "
            f"(keys [ ])  ·  allowed now: {', '.join(sorted(enabled)) or 'nothing'}"
        )
        msg = self.query_one("#message", Static)
        msg.update(Text(self.message))
        msg.set_class(self.message.startswith("refused"), "refused")

    def _round_panel(self, table: dict[str, Any], rnd: dict[str, Any]) -> Table:
        grid = Table(title=f"Round {rnd.get('round_id') or '—'}  ({rnd.get('phase', 'none')})", expand=True)
        for col in ("seat", "bet", "hand", "cards = total", "status"):
            grid.add_column(col)
        if rnd.get("seats"):
            for seat in rnd["seats"]:
                chip = " +JP" if seat.get("jackpot_chip") else ""
                ins = f" ins {money(seat['insurance'])}" if seat.get("insurance") else ""
                for hand in seat.get("hands") or []:
                    bet = money(seat.get("bet")) + chip + ins
                    status = str(hand.get("status", ""))
                    grid.add_row(str(seat["seat"]), bet, str(hand.get("hand", 0)), hand_text(hand), status)
        else:
            for seat, bet in sorted((table.get("bets") or {}).items(), key=lambda kv: int(kv[0])):
                grid.add_row(seat, money(bet.get("amount")), "", "", "bet placed")
        dealer = rnd.get("dealer") or {}
        if dealer.get("cards"):
            hidden = " (hole card hidden)" if dealer.get("hole_card_hidden") else ""
            grid.add_row("dealer", "", "", hand_text(dealer) + hidden, "")
        allowed = ", ".join(rnd.get("allowed_actions") or []) or "—"
        grid.caption = f"turn: {turn_text(rnd.get('turn'))}  ·  allowed: {allowed}"
        return grid

    def _shoe_panel(self, states: dict[str, dict[str, Any]]) -> Text:
        shoe, lid, jam = states.get("shoe", {}), states.get("lid", {}), states.get("jam", {})
        table, jackpot = states.get("table", {}), states.get("jackpot")
        linked = bool(shoe.get("linked", True))
        lid_state = "shuffling" if shoe.get("shuffling") else lid_text(lid)
        lines = [
            ("Shoe", "bold"),
            (f"cards dealt: {shoe.get('dealt_this_shoe', '—')}   out: {shoe.get('cards_out', '—')}", ""),
            (f"cards inside: {shoe.get('cards_inside', '—')}   decks: {shoe.get('decks') or '—'}", ""),
            (f"warning card: {'out: LAST ROUND' if shoe.get('last_round_of_shoe') else 'no'}", ""),
            (f"lid: {lid_state}", ""),
            (f"jam: {'JAMMED at ' + str(jam.get('location', '?')) if jam.get('jammed') else 'no'}",
             "bold red" if jam.get("jammed") else ""),
            _link_line(linked, "link_down" in (table.get("faults") or [])),
            (f"faults: {', '.join(table.get('faults') or []) or 'none'}", ""),
            ("", ""),
            (f"Jackpot meter: {money(jackpot.get('meter')) if jackpot else '—'}", "bold"),
            (f"pending hits: {self._hits_text()}", ""),
            (f"Dealer's last results: {self.results.text()}", "bold"),
        ]  # fmt: skip
        out = Text()
        for text, style in lines:
            out.append(text + "\n", style=style)
        return out

    def pending_hits(self) -> list[dict[str, Any]]:
        """Jackpot hits waiting for a supervisor to verify and pay them (PT-2001 r.49-50), from the retained
        ``state/jackpot``: a terminal started later still sees them."""
        hits = (self.client.view.states.get("jackpot") or {}).get("pending_hits") or []
        return [h for h in hits if isinstance(h, dict)]

    def _hits_text(self) -> str:
        hits = self.pending_hits()
        if not hits:
            return "none"
        return "; ".join(
            f"#{h.get('hit_id')} seat {h.get('seat')} {h.get('combination')} {money(h.get('amount'))} "
            f"{'verified' if h.get('verified') else 'to verify'}"
            for h in hits
        )

    @staticmethod
    def _alerts_panel(alerts: list[dict[str, Any]]) -> Text:
        out = Text("Open alerts\n", style="bold")
        if not alerts:
            out.append("none\n")
        for a in alerts[-6:]:
            style = "bold red" if a.get("severity") == "critical" else ""
            out.append(
                f"#{a.get('alert_id')} {a.get('kind')} {a.get('severity')}: {a.get('reason')}\n", style=style
            )
        return out

    # ---- inputs ----
    def action_seat(self, seat: int) -> None:
        if 1 <= seat <= self.conn.seats:
            self.seat = seat
            self._dirty = True

    def action_chip(self, step: int) -> None:
        i = CHIPS.index(self.chip) if self.chip in CHIPS else 1
        self.chip = CHIPS[max(0, min(len(CHIPS) - 1, i + step))]
        self._dirty = True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if bid.startswith("in-"):
            self.action_dealer(bid[3:])
        elif bid.startswith("sv-"):
            self.action_supervisor(bid[3:])
        elif bid == "demo-draw":
            self.action_draw()
        elif bid == "demo-lid":
            self.action_lid_cycle()

    def dealer_args(self, action: str) -> dict[str, Any]:
        rnd = self.client.view.states.get("round", {})
        turn = rnd.get("turn") or {}
        if action == "place_bet":
            return {"seat": self.seat, "amount": self.chip}
        if action in ("clear_bet", "jackpot_chip"):
            return {"seat": self.seat}
        if action in ("insurance", "decline_insurance", "even_money") and turn.get("seat"):
            args: dict[str, Any] = {"seat": int(turn["seat"])}
            if action == "insurance":  # insurance is half the main bet (PT-2001 r.26)
                bet = next(
                    (s.get("bet", 0) for s in rnd.get("seats") or [] if s.get("seat") == turn["seat"]), 0
                )
                args["amount"] = int(bet) // 2
            return args
        return {}

    def action_dealer(self, action: str) -> None:
        # Sent even when the button is disabled by a key: the controller decides and its reason is shown.
        if action not in (*BETTING_INPUTS, *PLAY_INPUTS, *ROUND_END_INPUTS):
            return
        args = self.dealer_args(action)
        self._run(action, lambda: self.client.dealer(action, **args))

    def action_supervisor(self, action: str) -> None:
        if action not in SUPERVISOR_KEYS:
            return
        _, label, arg_label = SUPERVISOR_KEYS[action]
        default = self.conn.profile if action == "open_table" else ""
        if action == "ack_alert":
            default = ",".join(str(a.get("alert_id")) for a in self.client.view.alerts_open)
        elif action.startswith("jackpot_") and self.pending_hits():
            default = str(self.pending_hits()[0].get("hit_id"))

        def done(cred: Credential | None) -> None:
            if cred is not None:
                self._supervisor_send(action, cred)

        self.push_screen(CredentialScreen(label, arg_label, default), done)

    def _supervisor_send(self, action: str, cred: Credential) -> None:
        sup = self.sup_client
        if sup is None:
            self._show(f"refused: {action}: this terminal has no supervisor channel (--supervisor-account)")
            return
        if action == "ack_alert":
            try:
                ids = [int(x) for x in cred.arg.replace(" ", "").split(",") if x]
            except ValueError:
                self._show(f"refused: ack_alert: alert ids must be integers, got {cred.arg!r}")
                return
            ids = ids or [int(a["alert_id"]) for a in self.client.view.alerts_open]

            async def ack_all() -> dict[str, Any]:
                for alert_id in ids:
                    await sup.supervisor(cred.user, cred.pin, "ack_alert", alert_id=alert_id)
                return {"acknowledged": ids}

            self._run(action, ack_all)
            return
        args: dict[str, Any] = {}
        if action == "open_table":
            args["profile"] = cred.arg or self.conn.profile
        elif action.startswith("jackpot_"):
            if not cred.arg.isdigit():
                self._show(f"refused: {action}: the jackpot hit id must be an integer, got {cred.arg!r}")
                return
            args["hit_id"] = int(cred.arg)
        self._run(action, lambda: sup.supervisor(cred.user, cred.pin, action, **args))

    def action_draw(self) -> None:
        """Demo only: the emulated shoe deals the next card (stands in for the dealer pulling one)."""
        if self._control is not None:
            self._run("draw", lambda: self._control.draw(1))

    def action_lid_cycle(self) -> None:
        """Demo only: the round's cards go in through the open lid, the dealer closes it (PT-2001 r.59-60)."""

        async def cycle() -> None:
            await self._control.insert()
            await self._control.close_lid()

        if self._control is not None:
            self._run("cards in + lid", cycle)

    def _run(self, what: str, call: Callable[[], Awaitable[Any]]) -> None:
        async def job() -> None:
            try:
                await call()
            except CommandFailed as exc:
                self._show(f"refused: {what}: {exc.reason}")
            except TimeoutError:
                self._show(f"refused: {what}: no answer from the controller (is it online?)")
            except Exception as exc:  # the emulator's control socket or the link: show, never crash
                self._show(f"refused: {what}: {exc}")
            else:
                self._show(f"ok: {what}")

        self.run_worker(job(), exclusive=False)

    def _show(self, message: str) -> None:
        self.message = message
        self._dirty = True


def _link_line(linked: bool, fault: bool) -> tuple[str, str]:
    """The shoe link: down, back but its fault not yet cleared by a supervisor (F12), or ok."""
    if not linked:
        return ("link: DOWN", "bold red")
    if fault:
        return ("link: back, fault raised: a supervisor clears it (F12)", "bold yellow")
    return ("link: ok", "")
