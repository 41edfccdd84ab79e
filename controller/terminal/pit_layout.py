"""The pit terminal's layout: its stylesheet, its widgets top to bottom and how they fit the terminal's size
(docs/terminal.md: from 80x24 up)."""

from __future__ import annotations

import contextlib
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal, HorizontalGroup, Vertical, VerticalScroll
from textual.widgets import Button, Footer, Static

from controller.plain import clean
from controller.terminal.pit_connection import PitConnection
from controller.terminal.pit_keys import DEALER_KEYS, DEMO_KEYS, SUPERVISOR_KEYS

# one button's cell in the key grid ("At the machine (l)" whole, with the button's padding and the gutter): the
# grid has as many columns as fit
BUTTON_WIDTH = 3 + max(
    len(f"{label} ({key})")
    for key, label in [
        *DEALER_KEYS.values(),
        *DEMO_KEYS.values(),
        *((k.upper(), lb) for k, lb, _ in SUPERVISOR_KEYS.values()),
    ]
)
PIT_CSS = """
    #body { height: 1fr; }
    #banner { height: auto; padding: 0 1; background: $primary-darken-2; }
    #banner.offline { background: $error; }
    #main { height: 1fr; }
    #panels { height: auto; }
    #left { width: 3fr; height: auto; }
    #right { width: 2fr; height: auto; }
    #body.narrow #panels { layout: vertical; }
    #body.narrow #left, #body.narrow #right { width: 1fr; }
    #legend { display: none; }
    #body.short #legend { display: block; }
    #body.short .buttons { display: none; }
    .panel { border: round $secondary; padding: 0 1; height: auto; }
    #round { height: auto; min-height: 6; }
    #body.short #round { border: none; padding: 0; min-height: 0; }
    #summary { height: auto; padding: 0 1; }
    #attach { height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #body.short #banner { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #entry { height: auto; padding: 0 1; }
    #hint { height: auto; padding: 0 1; background: $boost; text-style: bold; }
    #message { height: auto; padding: 0 1; }
    #message.refused { color: $error; }
    .buttons { layout: grid; grid-size: 4; grid-rows: 1; grid-gutter: 0 1; height: auto; padding: 0 1; }
    .buttons Button { width: 100%; min-width: 0; }
    .buttons Button.allowed { background: $success; color: $text; text-style: bold; }
    """


def pit_widgets(conn: PitConnection) -> ComposeResult:
    """Top to bottom: banner, the table (the round on top; below it the last round in full, the shoe, the
    jackpot, the alerts and, on a short terminal, every key: PageDown scrolls to them), the last settlement's
    net per seat and the open alerts in one line, the next useful key, the selection, the dealer's and the
    supervisor's buttons (not on a short terminal: the keys are named in the round's "allowed" line and in
    the legend), the floor console (demo), the last answer, the footer (PgDn / PgUp, q).
    Narrow terminals stack the panels instead of side by side."""
    with Vertical(id="body"):
        yield Static("connecting…", id="banner")
        with VerticalScroll(id="main"):
            with Horizontal(id="panels"):
                with Vertical(id="left"):
                    yield Static("", id="round", classes="panel")
                    yield Static("", id="lastround", classes="panel")
                with Vertical(id="right"):
                    yield Static("", id="shoe", classes="panel")
                    yield Static("", id="alerts", classes="panel")
            yield Static(legend(conn, set(DEALER_KEYS)), id="legend", classes="panel")
        yield Static("", id="summary")
        yield Static("", id="hint")
        yield Static("", id="entry")
        with HorizontalGroup(classes="buttons", id="dealer-buttons"):
            for action, (key, label) in DEALER_KEYS.items():
                yield Button(f"{label} ({key})", id=f"in-{action}", disabled=True, compact=True)
        with HorizontalGroup(classes="buttons", id="supervisor-buttons"):
            for action, (key, label, _) in SUPERVISOR_KEYS.items():
                yield Button(f"{label} ({key.upper()})", id=f"sv-{action}", variant="warning", compact=True)
            if conn.demo is not None:
                for action, (key, label) in DEMO_KEYS.items():
                    if action != "chip" or conn.demo.chip_sensor:
                        yield Button(f"{label} ({key})", id=f"demo-{action}", variant="success", compact=True)
        if (
            conn.floor_console
        ):  # one line (`sh <workdir>/floor-console` in the demo): never wrapped at 80 columns
            yield Static(Text(f"floor console: {clean(conn.floor_console, 300)}", no_wrap=True,
                              overflow="ellipsis"), id="attach")  # fmt: skip
        yield Static("", id="message")
    yield Footer()


def legend(conn: PitConnection, shown: set[str]) -> Text:
    """Every key, for a short terminal where the buttons are not shown (below the table: PageDown): the dealer's
    as the buttons are (``shown``: pit_rules.shown_inputs, none this table can never enable)."""
    dealer = "  ".join(f"{k} {label}" for a, (k, label) in DEALER_KEYS.items() if a in shown)
    keys = "  ".join(f"{k.upper()} {label}" for k, label, _ in SUPERVISOR_KEYS.values())
    out = Text("Keys\n", style="bold")
    out.append(f"Dealer: 1-{conn.seats} seat  [ ] chip  {dealer}\n")
    out.append(f"Supervisor (user + PIN): {keys}\n")
    if conn.demo is not None:
        out.append("Demo: " + "  ".join(f"{k} {label.lower()}" for k, label in DEMO_KEYS.values()) + "\n")
    if conn.floor_console:
        out.append(f"floor console: {clean(conn.floor_console, 300)}\n")
    out.append("PgDn / PgUp scroll this page  ·  q quit")
    return out


def fit_layout(app: App[Any], width: int, height: int) -> None:
    """As many button columns as fit the width (at 80 columns no label is cut); below 100 columns the
    panels stack; below 32 rows the round is drawn compact and the buttons give way to the legend of every key
    (below the table, PageDown), so that the round, the last settlement and the alerts fit without scrolling."""
    columns = max(2, min(8, (width - 2) // BUTTON_WIDTH))
    for group in app.query(".buttons"):
        group.styles.grid_size_columns = columns
    with contextlib.suppress(Exception):  # before compose has run
        body = app.query_one("#body")
        body.set_class(width < 100, "narrow")
        body.set_class(height < 32, "short")
