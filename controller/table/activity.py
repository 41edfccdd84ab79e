"""The service log's account of what happened at the table, for an operator reading `journalctl` or the demo's
controller.log: the session opened or closed, each round settled, faults, and each supervisor action with who
did it. One INFO line each, written after the journal committed it; the journal stays the record.

Strings in these lines come from commands and devices: they are cleaned (controller/plain.py) so a
newline or an escape sequence cannot forge or hide a log line."""

from __future__ import annotations

import logging
from typing import Any

from controller.effects import Event, EventKind
from controller.plain import clean
from controller.words import money

log = logging.getLogger("tablectl.table")


def _money(cents: Any) -> str:
    return money(cents)


def describe(fx: Event) -> str | None:
    """One line for an event worth an operator's attention, or None."""
    data = fx.data if isinstance(fx.data, dict) else {}
    if fx.kind is EventKind.SESSION:
        profile = f" ({data.get('profile')})" if data.get("profile") else ""
        return f"table {data.get('action')}: session {data.get('session_id')}{profile}"
    if fx.kind is EventKind.SETTLEMENT:
        hands = [h for h in data.get("hands") or [] if isinstance(h, dict)]
        net = sum(h.get("net") or 0 for h in hands if isinstance(h.get("net"), int))
        return (
            f"round {data.get('round_id')} settled: dealer {data.get('dealer_total')}, {len(hands)} hand(s), "
            f"players net {_money(net)}"
        )
    if fx.kind is EventKind.FAULT:
        return f"fault {data.get('fault')} {data.get('state')}"
    return None


def log_step(effects: list[Any]) -> None:
    for fx in effects:
        if isinstance(fx, Event) and (line := describe(fx)) is not None:
            log.info("%s", clean(line, 400))


def log_supervisor(user: str, role: str, action: str, error: str | None = None) -> None:
    who = f"{clean(user, 64)} ({clean(role, 20)})"
    if error is None:
        log.info("%s: %s", clean(action, 64), who)
    else:
        log.info("%s by %s refused: %s", clean(action, 64), who, clean(error, 300))
