"""A shoe the table cannot reach while nothing else says so: not plugged in (or switched off, or silent) since
the service started, or lost while no session is open. The service runs all the same (READY=1 once the journal
and the broker are up: controller/service/status.py), the lid stays locked and nothing can be dealt, and the
driver takes the shoe as soon as its device appears (drivers/shoe.py resolves the port again on every attempt).
The floor and the pit terminal learn it from a ``link_down`` alert (key ``shoe_absent``; critical while a session
uses the shoe, a warning without a session) raised once the first attempt to reach the shoe has failed, which closes
itself (acknowledged by ``tablectl``) once the shoe answers: the alert reports what the service measures, so it
follows docs/mqtt.md's rule for alerts whose cause is gone. A link lost during a session is the table's own
``link_down`` fault instead (controller/table/link.py): that one waits for an authorised person."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from controller.mqtt.alerts import AlertManager
from controller.service.alerts import UNJOURNALED_ACK as SELF_CLEARED
from controller.shell.controller import TableController
from controller.table.machine_names import Trigger

log = logging.getLogger("tablectl.service")

ALERT_KIND = "link_down"  # controller/alert_kinds.py
KEY = "shoe_absent"  # details["key"]: this watch's alerts, apart from the table fault's
EVERY_S = 1.0


class ShoeWatch:
    def __init__(self, shoe: Any, alerts: AlertManager, table: TableController) -> None:
        self.shoe = getattr(shoe, "shoe", shoe)  # the shoe itself when a separate card reader deals
        self.alerts = alerts
        self.table = table

    async def run(self) -> None:
        while True:
            try:
                self.tick()
            except Exception as exc:  # a journal that cannot write: its journal_io fault; the next tick again
                log.error("shoe watch: %s", exc)
            await asyncio.sleep(EVERY_S)

    def tick(self) -> None:
        if self.shoe.connected:
            self._close_open()
        elif self._unsaid():
            self._raise()

    def _unsaid(self) -> bool:
        """The shoe is out of reach and no table fault says so: never reached since the start (a session open
        or not), or lost where the table enters no fault for it (no session: closed, a failed deck check)."""
        if not self.shoe.problem:  # the first attempt is still under way
            return False
        core = self.table.core
        if "link_down" in core.faults:
            return False
        return not self.shoe.ever_connected or not self._in_use()

    def _in_use(self) -> bool:
        """A session uses the shoe: a lost link would be the table's fault (controller/table/link.py)."""
        return bool(self.table.core.gate.may(Trigger.LINK_LOST))

    def _raise(self) -> None:
        problem = self.shoe.problem
        closed = not self._in_use()
        found = self.alerts.book.find(ALERT_KIND, KEY)
        if found is not None and (found.details or {}).get("problem") == problem:
            return  # said already (also by the previous run: the book is rebuilt from the journal)
        alert = self.alerts.raise_or_repeat(
            ALERT_KIND,
            "warning" if closed else "critical",
            f"the shoe is not connected ({problem}): the lid stays locked and nothing can be dealt until it "
            "answers; this alert closes itself then",
            key=KEY,
            details={"port": str(getattr(self.shoe, "port", "")), "problem": problem},
        )
        log.warning("shoe not connected (%s): alert %s", problem, alert.alert_id)

    def _close_open(self) -> None:
        for alert in self.alerts.open_alerts:
            if alert.kind == ALERT_KIND and (alert.details or {}).get("key") == KEY:
                self.alerts.acknowledge(alert.alert_id, SELF_CLEARED)
                log.warning("shoe connected: alert %s closed (its cause is gone)", alert.alert_id)
