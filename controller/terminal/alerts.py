"""The floor supervisor's alert console (Textual): every table's open alerts, most severe and newest first,
with age and escalation level; acknowledge one behind the credential prompt; the history of
acknowledgements (docs/mqtt.md "Alerts", docs/terminal.md)."""

from __future__ import annotations

import contextlib
import time
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Label, Static

from controller.client import CommandFailed
from controller.plain import LIMIT, clean, plain
from controller.terminal.credentials import Credential, CredentialScreen
from controller.terminal.fleet import FleetAlerts, TableAlert
from controller.terminal.view import alert_age, number
from controller.words import ACTION_WORDS, SEVERITY_WORDS, alert_words, count, in_words, words

ACK = words(ACTION_WORDS, "ack_alert")  # "Acknowledge alerts": never the command's name
OPEN_HEAD = ("table", "id", "severity", "kind", "level", "age", "reason")
HISTORY_HEAD = ("table", "id", "kind", "acked by", "reason")
FLASH_SECONDS = 3.0  # how long the banner flashes after a new or escalated alert


def site_words(site: str) -> str:
    """The header's site: "all sites" for the MQTT wildcard, else "site <name>"."""
    return "all sites" if site == "+" else f"site {clean(site, 40)}"


def reason(alert: dict[str, Any], room: int = LIMIT) -> Text:
    """The controller's reason, in words (card faces, hands from 1, known names as labels), as plain text; one
    longer than ``room`` ends in "…" (never cut off silently at the screen's edge)."""
    return plain(in_words(str(alert.get("reason", ""))), max(24, room))


def _taken(head: tuple[str, ...], rows: list[list[Text]]) -> int:
    """The screen columns the cells before the reason take: each column as wide as its widest cell, padded by
    one on each side, and the scroll bar."""
    widths = [len(h) for h in head]
    for row in rows:
        widths = [max(w, cell.cell_len) for w, cell in zip(widths, row, strict=True)]
    return sum(w + 2 for w in widths) + 4


def alert_key(row: TableAlert) -> tuple[str, int]:
    return (row.prefix, row.alert_id)


class AlertsApp(App[None]):
    TITLE = "tablectl alert console"
    CSS = """
    #banner { height: 1; padding: 0 1; background: $primary-darken-2; }
    #banner.offline { background: $error; }
    #banner.flash { background: $warning; color: $text; text-style: bold reverse; }
    #open { height: 2fr; }
    #history { height: 1fr; }
    #message { height: 1; padding: 0 1; }
    #message.refused { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "ack", "Acknowledge selected"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, fleet: FleetAlerts) -> None:
        super().__init__()
        self.fleet = fleet
        self.rows: list[TableAlert] = []
        self.message = ""
        self._dirty = True
        self._levels: dict[tuple[str, int], float] = {}  # open alert -> escalation level last shown
        self._flash_until = 0.0
        self._flash_text = ""
        self.bells = 0  # how many times the console rang (a new or escalated alert)

    def compose(self) -> ComposeResult:
        yield Static("connecting…", id="banner")
        yield Label("Open alerts (most severe, most escalated, newest first)")
        yield DataTable(id="open", cursor_type="row")
        yield Label("Acknowledged")
        yield DataTable(id="history", cursor_type="row")
        yield Static("", id="message")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#open", DataTable).add_columns(*OPEN_HEAD)
        self.query_one("#history", DataTable).add_columns(*HISTORY_HEAD)
        self.fleet.on_change.append(self._changed)
        self.run_worker(self._connect(), exclusive=False)
        self.set_interval(1.0, self._changed)  # ages tick, the flash ends
        self.set_interval(0.25, self._tick)

    async def _connect(self) -> None:
        with contextlib.suppress(TimeoutError, OSError):
            await self.fleet.connect(timeout=5)
        self._dirty = True

    async def on_unmount(self) -> None:
        with contextlib.suppress(Exception):
            await self.fleet.close()

    def _changed(self) -> None:
        self._dirty = True

    def _tick(self) -> None:
        if self._dirty and self.query("#banner"):  # no widgets while the app starts or exits: later, or never
            self._dirty = False
            self.refresh_view()

    def refresh_view(self) -> None:
        """Everything from outside (table ids from topics, alert fields, refusal reasons) is shown as plain
        text (controller/plain.py): a reason is never markup and never a terminal sequence."""
        banner = self.query_one("#banner", Static)
        banner.set_class(not self.fleet.mqtt.connected, "offline")
        self.rows = self.fleet.open_alerts()
        self._ring_on_news()
        flashing = time.monotonic() < self._flash_until
        banner.set_class(flashing and self.fleet.mqtt.connected, "flash")
        header = (
            f"{site_words(self.fleet.site)}  ·  {count(len(self.fleet.open), 'table')}  ·  "
            f"{count(len(self.rows), 'open alert')}"
        )
        if flashing:
            header = f"{self._flash_text}  ·  {header}"
        why = f" ({clean(self.fleet.mqtt.last_error, 120)})" if self.fleet.mqtt.last_error else ""
        banner.update(
            Text(header) if self.fleet.mqtt.connected else Text(f"BROKER UNREACHABLE{why} — reconnecting…")
        )
        table = self.query_one("#open", DataTable)
        room = self.size.width or 160  # the reason column gets what the other columns leave
        cursor = table.cursor_row
        table.clear()
        rows = [
            [plain(r.table, 40), plain(r.alert_id), plain(words(SEVERITY_WORDS, r.alert.get("severity")), 20),
             plain(alert_words(r.alert.get("kind")), 40), plain(r.alert.get("level", 0), 10),
             plain(alert_age(r.alert.get("raised_at")))]
            for r in self.rows
        ]  # fmt: skip
        left = room - _taken(OPEN_HEAD[:-1], rows)
        for r, cells in zip(self.rows, rows, strict=True):
            table.add_row(*cells, reason(r.alert, left))
        if self.rows:
            table.move_cursor(row=min(cursor, len(self.rows) - 1))
        hist = self.query_one("#history", DataTable)
        hist.clear()
        acked = self.fleet.history[:50]
        rows = [[plain(r.table, 40), plain(r.alert_id), plain(alert_words(r.alert.get("kind")), 40),
                 plain(r.alert.get("acked_by"), 40)] for r in acked]  # fmt: skip
        left = room - _taken(HISTORY_HEAD[:-1], rows)
        for r, cells in zip(acked, rows, strict=True):
            hist.add_row(*cells, reason(r.alert, left))
        msg = self.query_one("#message", Static)
        msg.update(plain(self.message, 400))
        msg.set_class(self.message.startswith("refused"), "refused")

    def _ring_on_news(self) -> None:
        """A bell and a flashing banner when an alert appears or its escalation level rises."""
        news: list[TableAlert] = []
        levels: dict[tuple[str, int], float] = {}
        for r in self.rows:
            level = number(r.alert.get("level"))
            levels[alert_key(r)] = level
            if level > self._levels.get(alert_key(r), -1.0):
                news.append(r)
        self._levels = levels
        if news:
            first = news[0]
            what = "NEW ALERT" if len(news) == 1 and first.alert.get("level") in (None, 0) else "ALERT"
            self._flash_text = (
                f"{what}: {clean(first.table, 40)} #{first.alert_id} {clean(alert_words(first.alert.get('kind')), 60)} "
                f"({clean(words(SEVERITY_WORDS, first.alert.get('severity')), 20)}, "
                f"level {clean(first.alert.get('level', 0), 10)})"
                + (f" and {len(news) - 1} more" if len(news) > 1 else "")
            )
            self._flash_until = time.monotonic() + FLASH_SECONDS
            self.bells += 1
            self.bell()

    def action_ack(self) -> None:
        table = self.query_one("#open", DataTable)
        if not self.rows:
            self._show("refused: no open alert to acknowledge")
            return
        row = self.rows[min(table.cursor_row, len(self.rows) - 1)]

        def done(cred: Credential | None) -> None:
            if cred is not None:
                self.run_worker(self._ack(row, cred), exclusive=False)

        self.push_screen(CredentialScreen(f"{ACK} #{row.alert_id} on {row.table}"), done)

    async def _ack(self, row: TableAlert, cred: Credential) -> None:
        try:
            await self.fleet.acknowledge(row.prefix, cred.user, cred.pin, row.alert_id)
        except CommandFailed as exc:
            self._show(f"refused: {ACK} #{row.alert_id}: {in_words(exc.reason)}")
        except Exception as exc:  # broker gone, timeout: shown, never a crash
            self._show(f"refused: {ACK} #{row.alert_id}: {exc or type(exc).__name__}")
        else:
            self._show(f"ok: alert #{row.alert_id} on {row.table} acknowledged by {cred.user}")

    def _show(self, message: str) -> None:
        self.message = message
        self._dirty = True
