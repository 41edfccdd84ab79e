"""The floor supervisor's alert console (Textual): every table's open alerts, most severe and newest first,
with age and escalation level; acknowledge one behind the credential prompt; the history of
acknowledgements (docs/mqtt.md "Alerts", docs/terminal.md)."""

from __future__ import annotations

import contextlib
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Label, Static

from controller.client import CommandFailed
from controller.terminal.credentials import Credential, CredentialScreen
from controller.terminal.fleet import FleetAlerts, TableAlert
from controller.terminal.view import alert_age


class AlertsApp(App[None]):
    TITLE = "tablectl alert console"
    CSS = """
    #banner { height: 1; padding: 0 1; background: $primary-darken-2; }
    #banner.offline { background: $error; }
    #open { height: 2fr; }
    #history { height: 1fr; }
    #message { height: 1; padding: 0 1; }
    #message.refused { color: $error; }
    """
    BINDINGS: ClassVar[list[Binding]] = [
        Binding("a", "ack", "Acknowledge selected"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, fleet: FleetAlerts) -> None:
        super().__init__()
        self.fleet = fleet
        self.rows: list[TableAlert] = []
        self.message = ""
        self._dirty = True

    def compose(self) -> ComposeResult:
        yield Static("connecting…", id="banner")
        yield Label("Open alerts (most severe, most escalated, newest first)")
        yield DataTable(id="open", cursor_type="row")
        yield Label("Acknowledged")
        yield DataTable(id="history", cursor_type="row")
        yield Static("", id="message")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#open", DataTable).add_columns(
            "table", "id", "severity", "kind", "level", "age", "reason"
        )
        self.query_one("#history", DataTable).add_columns("table", "id", "kind", "acked by", "reason")
        self.fleet.on_change.append(self._changed)
        self.run_worker(self._connect(), exclusive=False)
        self.set_interval(1.0, self._changed)  # ages tick
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
        if self._dirty:
            self._dirty = False
            self.refresh_view()

    def refresh_view(self) -> None:
        banner = self.query_one("#banner", Static)
        banner.set_class(not self.fleet.connected, "offline")
        self.rows = self.fleet.open_alerts()
        banner.update(
            f"site {self.fleet.site}  ·  {len(self.fleet.open)} table(s)  ·  {len(self.rows)} open alert(s)"
            if self.fleet.connected
            else "BROKER UNREACHABLE — reconnecting…"
        )
        table = self.query_one("#open", DataTable)
        cursor = table.cursor_row
        table.clear()
        for r in self.rows:
            a = r.alert
            table.add_row(r.table, str(r.alert_id), str(a.get("severity")), str(a.get("kind")),
                          str(a.get("level", 0)), alert_age(float(a.get("raised_at") or 0)),
                          str(a.get("reason", "")))  # fmt: skip
        if self.rows:
            table.move_cursor(row=min(cursor, len(self.rows) - 1))
        hist = self.query_one("#history", DataTable)
        hist.clear()
        for r in self.fleet.history[:50]:
            hist.add_row(r.table, str(r.alert_id), str(r.alert.get("kind")), str(r.alert.get("acked_by")),
                         str(r.alert.get("reason", "")))  # fmt: skip
        msg = self.query_one("#message", Static)
        msg.update(self.message)
        msg.set_class(self.message.startswith("refused"), "refused")

    def action_ack(self) -> None:
        table = self.query_one("#open", DataTable)
        if not self.rows:
            self._show("refused: no open alert to acknowledge")
            return
        row = self.rows[min(table.cursor_row, len(self.rows) - 1)]

        def done(cred: Credential | None) -> None:
            if cred is not None:
                self.run_worker(self._ack(row, cred), exclusive=False)

        self.push_screen(CredentialScreen(f"ack_alert #{row.alert_id} on {row.table}"), done)

    async def _ack(self, row: TableAlert, cred: Credential) -> None:
        try:
            await self.fleet.acknowledge(row.prefix, cred.user, cred.pin, row.alert_id)
        except CommandFailed as exc:
            self._show(f"refused: ack_alert #{row.alert_id}: {exc.reason}")
        except Exception as exc:  # broker gone, timeout: shown, never a crash
            self._show(f"refused: ack_alert #{row.alert_id}: {exc or type(exc).__name__}")
        else:
            self._show(f"ok: alert #{row.alert_id} on {row.table} acknowledged by {cred.user}")

    def _show(self, message: str) -> None:
        self.message = message
        self._dirty = True
