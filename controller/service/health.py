"""The service's health loop: the systemd watchdog fed while the service is alive, READY once the journal and
the broker are up (in a fault or not, with its shoe or without: STATUS says which), STATUS on every change, the
owed journal writes retried, and the status file `tablectl status` reads (controller/ops/status.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from controller import sdnotify
from controller.ops.status import StatusWriter
from controller.shell.controller import TableController

log = logging.getLogger("tablectl.service")


class Watched(Protocol):
    """What the health loop reads of the service (controller/service/table_service.py ``TableService``)."""

    status_writer: StatusWriter

    def alive(self) -> bool: ...

    def status_text(self) -> str: ...

    def link_problems(self) -> list[str]: ...

    def not_ready(self) -> list[str]: ...


class HealthLoop:
    def __init__(self, service: Watched, journal_back: Callable[[], Awaitable[None]]) -> None:
        self.service = service
        self.journal_back = journal_back  # commits what is owed to the journal once it writes again
        self.ready_sent = False
        self.status_sent = ""

    async def run(self) -> None:
        service = self.service
        interval = sdnotify.watchdog_interval()
        period = min(interval / 2, 1.0) if interval else 1.0
        while True:
            if service.alive():
                sdnotify.watchdog()
            await self.journal_back()
            text = service.status_text()
            if not service.not_ready() and not self.ready_sent:
                sdnotify.ready(text)  # the service is up (in a fault or not, shoe or none: STATUS says which)
                self.ready_sent, self.status_sent = True, text
            elif text != self.status_sent:
                sdnotify.status(text)
                self.status_sent = text
            try:
                service.status_writer.tick(service)
            except Exception as exc:  # a full disk must not stop the watchdog pings
                log.debug("status file not written: %s", exc)
            # Until READY, look often: systemd (and a restart after kill -9) waits on it.
            await asyncio.sleep(period if self.ready_sent else 0.05)


async def retry_owed_journal_writes(table: TableController, journal_back: Callable[[], None]) -> None:
    """While the journal fault's input is owed: commit it as soon as the journal writes again (any successful
    commit does too); then ``journal_back`` (the alerts raised without the journal, through it now)."""
    if table.journal_problem is not None or table._deferred:
        try:
            if not await table.retry_journal():
                return
        except Exception as exc:
            log.error("journal retry failed: %s", exc)
            return
    try:
        journal_back()
    except Exception as exc:
        log.error("owed alerts not journaled yet: %s", exc)
