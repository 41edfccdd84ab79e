"""The dealer pit terminal (Textual): the live table and the dealer's inputs, over MQTT only.

Everything shown comes from the controller's retained documents and events (docs/mqtt.md); every input is a
command on ``cmd/dealer`` (plain, the broker ACL guards it) or, behind the credential prompt, a signed command
on ``cmd/supervisor`` through a second connection with a supervisor account. A refused input shows the
controller's reason. Keys and the credential prompt: docs/terminal.md.

What the dealer may do now is the table's ``state/table`` ``dealer_inputs`` only (view.py ``enabled_inputs``).
This module is the app (connections, model updates, refresh, key actions); its parts are ``pit_keys.py``,
``pit_layout.py``, ``pit_render.py``, ``pit_panels.py``, ``pit_rules.py``, ``pit_dealer.py``,
``pit_supervisor.py``, ``pit_demo.py``, ``pit_player.py`` with ``card_reader.py`` (a player card swiped or typed,
issue 41) and ``pit_connection.py`` (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.widgets import Button, Static

from controller.client import CommandFailed, Event, TableClient
from controller.plain import clean, plain
from controller.terminal.card_reader import NotACard, Swipe, SwipeCapture, card_from_entry
from controller.terminal.credentials import Credential, CredentialScreen
from controller.terminal.pit_connection import PitConnection
from controller.terminal.pit_dealer import chips_within, dealer_args, shown_bet
from controller.terminal.pit_demo import demo_step
from controller.terminal.pit_keys import DEALER_KEYS, DEMO_KEYS, SUPERVISOR_KEYS, bindings, hint_keys
from controller.terminal.pit_layout import PIT_CSS, fit_layout, legend, pit_widgets
from controller.terminal.pit_panels import deck_check_text, pending_hits, seated_player
from controller.terminal.pit_player import PlayerScreen
from controller.terminal.pit_render import PARTS, PitSnapshot
from controller.terminal.pit_rules import shown_inputs
from controller.terminal.pit_sign_in import DealerNameScreen
from controller.terminal.pit_supervisor import (
    SupervisorArgumentError,
    correction_prompt,
    supervisor_call,
    supervisor_default,
)
from controller.terminal.view import (
    BETTING_INPUTS,
    PLAY_INPUTS,
    ROUND_END_INPUTS,
    DealerResults,
    card_refusal,
    money_in_text,
)
from controller.words import ACTION_WORDS, card_face, in_words, words

DRAW_SETTLE_S = 5.0  # demo: a second card waits until the table has read the last one (at most this long)


class PitApp(App[None]):
    TITLE = "tablectl pit terminal"
    BINDINGS: ClassVar[list[BindingType]] = bindings()
    CSS = PIT_CSS

    def __init__(self, conn: PitConnection) -> None:
        super().__init__()
        self.conn = conn
        self.client = TableClient(conn.host, conn.port, username=conn.user, password=conn.password,
                                  prefix=conn.prefix, tls=conn.tls)  # fmt: skip
        self.sup_client: TableClient | None = None
        if conn.supervisor_account and conn.supervisor_password is not None:
            self.sup_client = TableClient(conn.host, conn.port, username=conn.supervisor_account,
                                          password=conn.supervisor_password, prefix=conn.prefix,
                                          key_dir=conn.key_dir, tls=conn.tls)  # fmt: skip
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
        # demo: the shoe's count (state/shoe) when a card was last drawn, and when (one card at a time)
        self._drawn: tuple[Any, float] | None = None
        self.deck_check: dict[str, Any] = {}  # the last events/deck_check (PT-2001 r.55)
        self.swipe = SwipeCapture()  # a player card swiped through the keyboard-wedge reader (issue 41)
        self._dirty = True

    # ---- layout ----
    def compose(self) -> ComposeResult:
        yield from pit_widgets(self.conn)

    def on_mount(self) -> None:
        self.client.on_change.append(self._on_change)
        self.run_worker(self._connect(), exclusive=False)
        self.set_interval(0.25, self._tick)
        fit_layout(self, self.size.width, self.size.height)

    def on_resize(self, event: Any) -> None:
        fit_layout(self, event.size.width, event.size.height)

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
        elif event is not None and event.topic == "events/deck_check" and isinstance(event.data, dict):
            self.deck_check = event.data
            self._show(deck_check_text(event.data)[0])
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
        if self._dirty and self.query("#banner"):  # no widgets while the app starts or exits: later, or never
            self._dirty = False
            self.refresh_view()

    # ---- rendering ----
    def snapshot(self, compact: bool = False) -> PitSnapshot:
        """What the screen is drawn from now (pit_render.py); ``compact``: a short terminal."""
        view = self.client.view
        return PitSnapshot(states=view.states, connected=self.client.connected, status=view.status,
                           why=self.client.last_error, alerts_open=view.alerts_open, prefix=self.conn.prefix,
                           seats=self.conn.seats, demo=self.conn.demo is not None, seat=self.seat, chip=self.chip,
                           compact=compact, burnt=self.burnt, last_settlement=self.last_settlement,
                           results=self.results, supervisor=self.sup_client is not None,
                           bet_so_far=self._sent_bets.get(self.seat, self._shown_bet(self.seat)),
                           deck_check=self.deck_check)  # fmt: skip

    def doc(self, name: str) -> dict[str, Any]:
        """A retained state document, or {} if none has arrived (or it is not an object)."""
        value = self.client.view.states.get(name)
        return value if isinstance(value, dict) else {}

    def chips(self) -> tuple[int, ...]:
        """The chip denominations the selector offers: within the open session's limits (``state/table``)."""
        return chips_within(self.doc("table").get("limits"))

    @property
    def currency(self) -> str | None:
        return self.snapshot().currency

    def refresh_view(self) -> None:
        """Every value from outside goes through controller/plain.py (text, never markup); a part whose
        document cannot be shown says so instead of stopping the terminal."""
        # a short terminal (below 32 rows): the round compact, the keys in the legend (pit_layout.fit_layout)
        snap = self.snapshot(compact=self.query_one("#body").has_class("short"))
        self.query_one("#banner", Static).set_class(not snap.connected or snap.status != "online", "offline")
        for name, render in PARTS.items():
            try:
                content: Any = render(snap)
            except Exception as exc:  # a malformed document: shown as such, never a crash
                content = plain(f"(cannot show this part: {type(exc).__name__}: {exc})", style="red")
            self.query_one(name, Static).update(content)
        enabled = snap.enabled
        shown = shown_inputs(snap.doc("table"), snap.doc("software"), snap.doc("jackpot"), enabled)
        for action in DEALER_KEYS:
            button = self.query_one(f"#in-{action}", Button)
            button.display = action in shown
            button.disabled = action not in enabled
            button.set_class(action in enabled, "allowed")
        self.query_one("#legend", Static).update(legend(self.conn, shown))
        self._forget_confirmed_bets()
        if self.chip not in self.chips():
            self.chip = min(self.chips(), key=lambda c: abs(c - self.chip))
        msg = self.query_one("#message", Static)
        msg.update(plain(self.message, 400))
        msg.set_class(self.message.startswith("refused"), "refused")

    def pending_hits(self) -> list[dict[str, Any]]:
        """Jackpot hits waiting for a supervisor to verify and pay them (PT-2001 r.49-50)."""
        return pending_hits(self.doc("jackpot"))

    # ---- inputs ----
    def action_seat(self, seat: int) -> None:
        if 1 <= seat <= self.conn.seats:
            self.seat = seat
            self._dirty = True

    def action_page(self, step: int) -> None:
        """PageDown / PageUp: the parts below the round (the last round in full, shoe, jackpot, alerts, keys)."""
        main = self.query_one("#main")
        (main.scroll_page_down if step > 0 else main.scroll_page_up)(animate=False)

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
        bet_so_far = self._sent_bets.get(self.seat, self._shown_bet(self.seat))
        return dealer_args(
            action, seat=self.seat, chip=self.chip, bet_so_far=bet_so_far, rnd=self.doc("round")
        )

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
        return shown_bet(self.doc("table"), seat)

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
        if action == "replace_card" and self.conn.demo is not None:
            self.run_worker(self._replace_card_prompt(arg_label), exclusive=False)
            return
        correction = self.doc("jackpot").get("pending_correction")
        correction = correction if isinstance(correction, dict) else None
        default = supervisor_default(
            action, self.conn.profile, self.client.view.alerts_open, self.pending_hits(), correction
        )
        arg_label = correction_prompt(action, arg_label, correction, self.currency)

        def done(cred: Credential | None) -> None:
            if cred is not None:
                self._supervisor_send(action, cred)

        self.push_screen(CredentialScreen(words(ACTION_WORDS, action), arg_label, default), done)

    async def _replace_card_prompt(self, arg_label: str | None) -> None:
        """Demo: the prompt proposes the damaged card itself (the emulated shoe says which one came out): the
        supervisor holds it and puts an identical card in its place (PT-2001 r.51)."""
        code = None
        if self.conn.demo is not None:
            with contextlib.suppress(Exception):  # the emulator's socket: then nothing is proposed
                code = await self.conn.demo.damaged_card()

        def done(cred: Credential | None) -> None:
            if cred is not None:
                self._supervisor_send("replace_card", cred)

        what = words(ACTION_WORDS, "replace_card")
        self.push_screen(CredentialScreen(what, arg_label, card_face(code) if code else ""), done)

    def _supervisor_send(self, action: str, cred: Credential) -> None:
        sup = self.sup_client
        what = words(ACTION_WORDS, action)
        if sup is None:
            self._show(f"refused: {what}: this terminal has no supervisor channel (--supervisor-account)")
            return
        try:
            call = supervisor_call(action, cred, sup, self.conn.profile, self.client.view.alerts_open)
        except SupervisorArgumentError as exc:
            self._show(str(exc))
            return
        self._run(what, call, by=cred.user)

    def action_sign_in(self) -> None:
        """The dealer on duty signs in (issue 29): the name is asked, the controller decides (between rounds)."""
        on_duty = self.doc("table").get("dealer")

        def done(name: str | None) -> None:
            if name is not None:
                self._run(words(ACTION_WORDS, "dealer_sign_in"),
                          lambda: self.client.dealer("dealer_sign_in", name=name), by=name)  # fmt: skip

        self.push_screen(DealerNameScreen(on_duty if isinstance(on_duty, str) else None), done)

    # ---- players at the seats (issue 41) ----
    async def on_event(self, event: events.Event) -> None:
        """A card swiped into the main screen (the keyboard-wedge reader types it, then Enter) seats the player
        at the selected seat; its keys never reach the seat and action keys. In a prompt the reader types into
        the focused field like any typing (pit_player.py)."""
        if isinstance(event, events.Key) and not event.is_forwarded and len(self.screen_stack) == 1:
            taken = self.swipe.feed(event.key, event.character, time.monotonic())
            if taken is Swipe.DONE:
                self._swiped(self.swipe.take())
            if taken is not Swipe.PASS:
                event.stop()
                event.prevent_default()
                return
        await super().on_event(event)

    def _swiped(self, read: str) -> None:
        try:
            card = card_from_entry(read)
        except NotACard as exc:
            self._show(f"refused: {words(ACTION_WORDS, 'player_in')}: {exc}")
            return
        self._player_in(self.seat, {"card": card})

    def action_player_in(self) -> None:
        """The prompt: a card swiped or typed, or an anonymous player's description, for the selected seat."""
        seat = self.seat

        def done(result: dict[str, Any] | NotACard | None) -> None:
            if isinstance(result, NotACard):
                self._show(f"refused: {words(ACTION_WORDS, 'player_in')}: {result}")
            elif result is not None:
                self._player_in(seat, result)

        self.push_screen(PlayerScreen(seat, seated_player(self.doc("players"), seat)), done)

    def _player_in(self, seat: int, args: dict[str, Any]) -> None:
        what = f"{words(ACTION_WORDS, 'player_in')} at seat {seat}"
        self._run(what, lambda: self.client.dealer("player_in", seat=seat, **args))

    def action_player_out(self) -> None:
        seat = self.seat
        what = f"{words(ACTION_WORDS, 'player_out')} at seat {seat}"
        self._run(what, lambda: self.client.dealer("player_out", seat=seat))

    def action_demo(self, action: str) -> None:
        """Demo only: what the dealer's hands and the hardware do, on the emulated shoe and GPIO board."""
        ctl = self._control
        if ctl is None or action not in DEMO_KEYS:
            return
        if action == "draw":  # the dealer draws only when a card is due: never past a decision or a stand
            why = card_refusal(self.doc("table"), self.doc("round"), self.snapshot().enabled, hint_keys())
            if why is None and self._draw_pending():
                why = "one card at a time: the table has not read the last card yet"
            if why is not None:
                self._show(f"refused: {DEMO_KEYS['draw'][1]}: {why}")
                return
            self._drawn = (self._shoe_count(), time.monotonic())
        step = demo_step(action, ctl, self.conn.demo, self.seat, self.doc("table").get("state"),
                         self.doc("lid").get("state"))  # fmt: skip
        if step is not None:
            self._run(*step)

    def _shoe_count(self) -> tuple[Any, Any]:
        shoe = self.doc("shoe")
        return (shoe.get("shoe_no"), shoe.get("dealt_this_shoe"))

    def _draw_pending(self) -> bool:
        """Demo: a card was drawn and the table has not yet counted it (state/shoe, published after the round)."""
        if self._drawn is None:
            return False
        count, at = self._drawn
        return count == self._shoe_count() and time.monotonic() - at < DRAW_SETTLE_S

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
                    self._show(f"refused: {what}: {in_words(money_in_text(exc.reason, self.currency))}")
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


def _is_burn(data: Any) -> bool:
    return isinstance(data, dict) and data.get("recipient") == "burn"
