"""The service's shutdown (SIGTERM/SIGINT, ``TableService.stop``: controller/service/table_service.py): the
outputs to their safe values first (lid locked, light on), the tasks cancelled, then each part stopped on its
own in this order: one that fails (a journal on a broken disk, a task that died) is logged and never keeps the
others from stopping (issue 14 item 3), and none waits longer than ``PART_STOP_TIMEOUT_S`` (a part stuck on a
dead peer is logged and left: systemd's TimeoutStopSec=20, systemd/tablectl.service, must never be what ends the
stop, or the journal would not be closed). The shoe's lid is locked on the device, ``offline`` is published when
the link stops, the journal is closed last."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from controller import sdnotify
from drivers.aio import cancel_tasks
from drivers.events import LockLid

if TYPE_CHECKING:
    from controller.service.table_service import TableService

log = logging.getLogger("tablectl.service")

# Each of the six parts stopped through _guarded (the link last of them), plus the lid command, within
# systemd's TimeoutStopSec=20 (systemd/tablectl.service): 6 x 3 s + 1 s.
PART_STOP_TIMEOUT_S = 3.0
LOCK_LID_TIMEOUT_S = 1.0


async def stop_service(service: TableService) -> None:
    s = service
    sdnotify.stopping("stopping: lid locked, light on")
    if s.table is not None:
        s.table._safe_outputs()
    await cancel_tasks([*s._tasks, *s._pending_faults], swallow_errors=True)
    if s.jackpot is not None:
        await _guarded("jackpot", s.jackpot.stop())
    if s.table is not None:
        await _guarded("table", s.table.stop())  # safe outputs
    if s.checkpointer is not None:
        s.checkpointer.stop()
        with contextlib.suppress(Exception):  # anchor the last records (sent at the next start if not now)
            s.checkpointer.write()
    if s.shoe is not None:
        if getattr(s.shoe, "shoe", s.shoe).connected:  # the shoe's lid, whatever the reader does
            with contextlib.suppress(Exception):
                await asyncio.wait_for(s.shoe.command(LockLid()), LOCK_LID_TIMEOUT_S)
        await _guarded("shoe", s.shoe.stop())
    if s.intake is not None:
        await _guarded("intake", s.intake.stop())
    if s.replay is not None:
        await _guarded("replay", s.replay.stop())
    if s.link is not None:
        await _guarded("link", s.link.stop())
    if s.board is not None:
        with contextlib.suppress(Exception):
            s.board.close()
    if s.journal is not None:
        with contextlib.suppress(Exception):
            s.journal.close()


async def _guarded(what: str, coro: Awaitable[Any]) -> None:
    try:
        await asyncio.wait_for(coro, PART_STOP_TIMEOUT_S)
    except TimeoutError:
        log.error("stopping %s took over %.0f s: left as it was", what, PART_STOP_TIMEOUT_S)
    except Exception:
        log.exception("stopping %s failed", what)
