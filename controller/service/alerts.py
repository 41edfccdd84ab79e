"""The table controller's alert sink in the service: the journaled AlertManager, and the alerts raised while
the journal cannot be written (issue 14 item 3); the alert book's escalation."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from controller.alert_kinds import ALERT_KINDS
from controller.mqtt.alerts import AlertManager
from controller.mqtt.unjournaled import UnjournaledPublisher
from controller.shell.controller import TableController
from controller.table.journal_io import is_write_failure
from controller.topics import ALERT_TYPE, ALERTS_EVENTS, ALERTS_OPEN, ALERTS_OPEN_TYPE

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

    def journal_back(self) -> None:
        """The journal writes again: the alerts raised without it now through it; the unjournaled retained
        copies are superseded by the journaled ones, and the retained open list is the journal's book again.
        (The shoe is asked again for the events it could not commit by the table itself:
        controller/table/shoe_resend.py.)"""
        if self.owed:
            self.flush()
        if self.unjournaled is not None and self.unjournaled.retained:
            self.unjournaled.forget()
            self.manager.publish_open()


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


UNJOURNALED_ACK = "tablectl"  # who acknowledges a recovered alert whose fault is no longer live


class BrokerAlertsReadback:
    """At start (issue 27 §5): the broker's retained ``alerts/open`` is read back once. A copy the table published
    while its journal could not write (``"journaled": false``) holds alerts the journal never got (the process
    died before it could journal them): each one not in the alert book is journaled now (raised, marked
    ``recovered_from: broker``); a ``journal_io`` alert among them whose fault is not live any more (the journal
    writes: this start proved it) is acknowledged at once by ``tablectl``. Then the open list is published
    through the journal, so the retained document is the journal's book again, whatever the broker held."""

    def __init__(self, manager: AlertManager, link: Any, live_faults: Any) -> None:
        self.manager = manager
        self.link = link
        self.live_faults = live_faults  # () -> the table's faults now
        self.done = False
        self.recovered: list[int] = []

    def start(self) -> None:
        """Subscribe (call before ``link.start()``)."""
        self.link.subscribe(ALERTS_OPEN, self._on_message)

    def _on_message(self, msg: Any) -> None:
        if self.done:
            return
        self.done = True  # the first copy after connecting: the retained one (or our own, then nothing stale)
        try:
            self._reconcile(msg.payload if msg.retain else b"")
        except Exception as exc:  # a journal that cannot write: the journal_io fault's own path
            log.error("alerts: the broker's retained alerts/open not reconciled: %s", exc)

    def _reconcile(self, payload: bytes) -> None:
        for alert in unjournaled_alerts(payload):
            kind, reason = str(alert.get("kind")), str(alert.get("reason", ""))
            if any(a.kind == kind and a.reason == reason for a in self.manager.open_alerts):
                continue
            details = dict(alert.get("details") or {}) if isinstance(alert.get("details"), dict) else {}
            details["recovered_from"] = "broker"
            raised = self.manager.raise_alert(
                kind,
                str(alert.get("severity", "warning")),
                reason,
                rule=str(alert.get("rule", "")),
                details=details,
            )
            self.recovered.append(raised.alert_id)
            if kind == "journal_io" and "journal_io" not in self.live_faults():
                self.manager.acknowledge(raised.alert_id, UNJOURNALED_ACK)
            log.warning(
                "alert %s [%s] published without the journal, journaled now: %s",
                kind,
                raised.severity,
                reason,
            )
        self.manager.publish_open()


def unjournaled_alerts(payload: bytes) -> list[dict[str, Any]]:
    """The alerts of a retained ``alerts/open`` the table published without its journal; [] for anything else."""
    try:
        doc = json.loads(payload) if payload else None
    except ValueError:
        return []
    if (
        not isinstance(doc, dict)
        or doc.get("journaled") is not False
        or not isinstance(doc.get("data"), dict)
    ):
        return []
    alerts = doc["data"].get("alerts")
    return (
        [a for a in alerts[:64] if isinstance(a, dict) and a.get("kind") in ALERT_KINDS]
        if isinstance(alerts, list)
        else []
    )
