"""Where the table shell raises the core's alerts: the ``AlertManager`` in the service, a log in tests."""

from __future__ import annotations

import logging
from typing import Any, Protocol

log = logging.getLogger("controller.table.controller")  # the shell's one logger


class AlertSink(Protocol):
    def raise_(self, kind: str, severity: str, reason: str, details: dict[str, Any]) -> None: ...


class LogAlerts:
    """Until the AlertManager is wired: log alerts and keep them for inspection."""

    def __init__(self) -> None:
        self.raised: list[tuple[str, str, str, dict[str, Any]]] = []

    def raise_(self, kind: str, severity: str, reason: str, details: dict[str, Any]) -> None:
        self.raised.append((kind, severity, reason, details))
        log.warning("alert %s [%s]: %s", kind, severity, reason)
