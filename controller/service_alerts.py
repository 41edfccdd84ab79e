"""The table controller's alert sink in the service: the journaled AlertManager, and the alerts raised while
the journal cannot be written (issue 14 item 3); the alert book's escalation."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from controller.mqtt.alerts import AlertManager
from controller.mqtt.topics import ALERT_TYPE, ALERTS_EVENTS, ALERTS_OPEN, ALERTS_OPEN_TYPE
from controller.mqtt.unjournaled import UnjournaledPublisher
from controller.table.controller import TableController
from controller.table.journal_io import is_write_failure

log = logging.getLogger("tablectl.service")


class AlertAdapter:
    """The table controller's alert sink, backed by the journaled AlertManager. When the journal cannot be
    written (issue 14 item 3) the alert goes out at once without it (``unjournaled``: marked so, with the id
    it will most likely get) and is raised through the journal once that writes again (``flush``)."""

    def __init__(self, manager: AlertManager, unjournaled: UnjournaledPublisher | None = None) -> None:
        self.manager = manager
        self.unjournaled = unjournaled
        self.owed: list[tuple[str, str, str, dict[str, Any]]] = []  # raised without the journal

    def raise_(self, kind: str, severity: str, reason: str, details: dict[str, Any]) -> None:
        rule = str(details.get("rule", "")) if isinstance(details, dict) else ""
        try:
            self.manager.raise_alert(kind, severity, reason, rule=rule, details=details)
        except Exception as exc:
            if not is_write_failure(exc):
                raise
            self._without_journal(kind, severity, reason, rule, details)

    def _without_journal(
        self, kind: str, severity: str, reason: str, rule: str, details: dict[str, Any]
    ) -> None:
        self.owed.append((kind, severity, reason, details))
        log.critical("alert %s [%s] not journaled: %s", kind, severity, reason)
        if self.unjournaled is None:
            return
        book, alert = self.manager.book, None
        for k, sev, why, det in self.owed:  # the open list as it will be once they are journaled
            r = str(det.get("rule", "")) if isinstance(det, dict) else ""
            book, alert = book.raised(k, sev, why, self.manager.clock(), rule=r, details=det)
        assert alert is not None
        self.unjournaled.publish(ALERTS_EVENTS, ALERT_TYPE, {"action": "raised", "alert": alert.to_dict()})
        self.unjournaled.publish(
            ALERTS_OPEN, ALERTS_OPEN_TYPE, {"alerts": [a.to_dict() for a in book.open]}, retain=True
        )

    def flush(self) -> None:
        """The journal writes again: raise the owed alerts through it (journaled, published with ids)."""
        while self.owed:
            kind, severity, reason, details = self.owed[0]
            rule = str(details.get("rule", "")) if isinstance(details, dict) else ""
            self.manager.raise_alert(kind, severity, reason, rule=rule, details=details)
            self.owed.pop(0)


async def escalate_while_journal_writes(
    alerts: AlertManager, table: TableController, every_s: float = 1.0
) -> None:
    """The alert book's escalation, paused while the journal cannot be written (nothing to record it in;
    the journal_io alert itself is critical already)."""
    while True:
        await asyncio.sleep(every_s)
        if table.journal_problem is not None:
            continue
        try:
            alerts.escalate_due()
        except Exception as exc:
            log.error("alerts: escalation pass failed: %s", exc)
