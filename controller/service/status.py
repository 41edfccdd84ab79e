"""What the running service says about itself: the links that are down, what holds READY=1 back (the journal
and the broker only: a shoe or card reader not plugged in is said, not waited for), its dead tasks, whether it
is alive (the systemd watchdog is fed only then) and the one line ``systemctl status`` shows (sd_notify STATUS=;
also in `tablectl status`: controller/ops/status.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from controller.journal import Journal
from controller.mqtt.commands import CommandIntake
from controller.mqtt.link import MqttLink
from controller.shell.controller import TableController
from controller.table.state import IntegrityFault
from drivers.usb_reader import UsbCardReader


def link_problems(shoe: Any, reader: UsbCardReader | None, link: MqttLink | None) -> list[str]:
    """The external links that are down, in words."""
    problems = []
    shoe = getattr(shoe, "shoe", shoe)  # the shoe itself when a separate reader deals
    if not (shoe and shoe.connected):
        problems.append(
            f"shoe link down ({shoe_problem(shoe)}): lid locked, no dealing until the shoe answers"
        )
    if reader is not None and not reader.connected:
        problems.append("card reader down")
    if not (link and link.connected):
        problems.append("broker unreachable")
    return problems


def shoe_problem(shoe: Any) -> str:
    """Why the shoe's link is down, in words ("" while it is up): not plugged in, not answering, lost."""
    shoe = getattr(shoe, "shoe", shoe)  # the shoe itself when a separate reader deals
    if shoe is not None and shoe.connected:
        return ""
    return str(getattr(shoe, "problem", "") or "not connected")


def not_ready(journal: Journal | None, link: MqttLink | None) -> list[str]:
    """What holds READY=1 back: the journal not open yet, the broker not connected. Not the shoe nor the card
    reader: a table whose shoe is unplugged runs, says so (STATUS, `tablectl status`, a ``link_down`` alert:
    controller/service/shoe_watch.py) and takes the shoe when it appears (docs/deploy.md)."""
    waiting = [] if journal is not None else ["journal not open"]
    if not (link and link.connected):
        waiting.append("broker unreachable")
    return waiting


def dead_tasks(tasks: list[asyncio.Task[Any]], shoe: Any, intake: CommandIntake | None) -> list[str]:
    """The names of the service's tasks that ended, the card line's and the command intake's included."""
    out = [t.get_name() for t in tasks if t.done()]
    part_tasks = getattr(shoe, "dead_tasks", None)  # the card line's forwarding (drivers/card_line.py)
    if callable(part_tasks):
        out.extend(part_tasks())
    if intake is not None and intake._worker is not None and intake._worker.done():
        out.append(intake._worker.get_name())
    return out


def alive(journal: Journal | None, table: TableController | None, dead: Callable[[], list[str]]) -> bool:
    """The service's own parts work: the journal answers and every task runs. External links (shoe,
    broker) do not count: restarting cannot mend them, so an outage degrades STATUS but keeps the watchdog
    fed. Nor does a journal that cannot be written (disk full, read-only): a restart cannot mend it either,
    and the running service keeps the table safe in the journal_io fault and answers commands. A hung
    event loop or a dead task stops the pings and systemd restarts the service."""
    if journal is None or table is None:
        return False
    try:
        journal.last_seq_on_disk()
    except Exception:
        return False
    return table.running() and not dead()


def status_text(table: TableController | None, dead: list[str], links: list[str], table_id: str) -> str:
    """What ``systemctl status`` shows (sd_notify STATUS=): the faults first, then the links."""
    parts: list[str] = []
    if table is not None and table.journal_problem is not None:
        parts.append(
            f"FAULT journal_io: {table.journal_problem.text}: dealing refused, lid locked; "
            "free space or remount, then a supervisor's clear_journal_io"
        )
    faults = table.core.faults if table is not None else {}
    if table is not None and table.journal_problem is None and "journal_io" in faults:
        parts.append("FAULT journal_io: the journal writes again; awaiting a supervisor's clear_journal_io")
    if "integrity" in faults:
        fault = faults["integrity"]
        parts.append(f"FAULT integrity: {fault.reason if isinstance(fault, IntegrityFault) else ''}")
    if dead:
        parts.append("task died: " + ", ".join(dead))
    if links:
        parts.append("degraded: " + ", ".join(links))
    return "; ".join(parts) or f"table {table_id}: shoe, journal and broker up"
