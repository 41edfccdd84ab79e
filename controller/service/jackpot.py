"""The progressive jackpot's I/O in the service (PT-2001 r.38-50), around the pure ``TableJackpot``: the
``[jackpot]`` config into ``open_table``, the chip-slot sensors (r.41a) and the sign's link in as journaled
inputs, the sign fed from the committed state."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from controller.config import TableConfig
from controller.effects import Rejected
from controller.jackpot.config import CHIP_SLOT_PREFIX
from controller.table import inputs
from controller.table.controller import TableController
from drivers.aio import cancel_tasks
from drivers.serial_port import resolve_port

log = logging.getLogger("tablectl.service")  # the service's log, as before the move


class JackpotWiring:
    """The jackpot's I/O around the pure core (``controller.jackpot.table``): the ``[jackpot]`` config into
    ``open_table``, the chip-slot sensors (r.41a) and the sign's link in as journaled inputs, and the sign
    fed from the committed state after every commit (the meter as it increments, WIN on a hit, a fault text).
    """

    FAULT_TEXT = "JACKPOT CLOSED"

    def __init__(self, config: TableConfig, table: TableController, board: Any) -> None:
        self.config = config
        self.table = table
        self.board = board
        self.driver: Any = None  # drivers.display.driver.DisplayDriver
        self._kick = asyncio.Event()
        self._shown: tuple[Any, ...] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._pending: set[asyncio.Task[Any]] = set()

    def config_for_open(self) -> dict[str, Any] | None:
        """Injected into every ``open_table``: journaled with it, so a replay applies the same parameters."""
        parsed = self.config.jackpot.parsed
        return parsed.to_dict() if parsed is not None and self.config.jackpot.enabled else None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for pin in self.config.gpio.pins:
            if pin.name.startswith(CHIP_SLOT_PREFIX):

                def on_edge(name: str, value: bool) -> None:  # may run on the GPIO library's thread
                    loop.call_soon_threadsafe(self._spawn, self._chip_edge(name, value))

                with contextlib.suppress(Exception):
                    self.board.on_edge(pin.name, on_edge)
        self.table.journal.add_commit_listener(lambda _tx: self._kick.set())
        d = self.config.display
        if not (d.enabled and self.config.jackpot.enabled):
            return
        from drivers.display.driver import DisplayDriver

        try:
            port = resolve_port(d.port)
        except Exception:  # not there yet: the driver's ping loop reopens it when it appears
            port = d.port
        self.driver = DisplayDriver(
            port,
            baudrate=d.baudrate,
            ack_timeout=d.ack_timeout_ms / 1000,
            retries=d.retries,
            on_connection=self._on_connection,
        )
        self._tasks.append(asyncio.create_task(self._feed(), name="jackpot-display"))
        await self.driver.start()

    async def stop(self) -> None:
        await cancel_tasks(self._tasks)
        self._tasks.clear()
        if self.driver is not None:
            await self.driver.stop()

    async def _chip_edge(self, name: str, value: bool) -> None:
        try:
            await self.table.submit_or_hold(inputs.GpioInput(name, value))
        except Exception:
            log.exception("chip slot %s failed", name)

    def _on_connection(self, connected: bool) -> None:
        self._spawn(self._link(connected))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._pending.add(task)  # keep a reference until done (asyncio holds tasks weakly)
        task.add_done_callback(self._pending.discard)

    async def _link(self, connected: bool) -> None:
        """The sign's link enters the core as an input (journaled, replayable): lost → unplayable (r.41)."""
        if connected:
            self._shown = None  # the sign may have restarted: show the meter again
        try:
            await self.table.submit(inputs.JackpotDisplay(connected))
        except Rejected as exc:  # incl. a journal write failure: the journal_io fault is raised
            log.error("jackpot display link input refused: %s", exc.reason)
        except Exception:
            log.exception("jackpot display link input failed")
        self._kick.set()

    def wanted(self) -> tuple[Any, ...]:
        """What the sign should show for the committed state."""
        jp = self.table.core.jackpot
        meter = getattr(jp, "meter", None)
        if meter is None or not getattr(jp, "enabled", False):
            return ("FLT", self.FAULT_TEXT)
        if meter.pending:  # the largest frozen award (r.49: until paid)
            hit = max(meter.pending, key=lambda h: (h.amount, -h.seat))
            return ("WIN", hit.seat, hit.amount, meter.currency)
        return ("MTR", meter.display_value, meter.currency)

    async def _feed(self) -> None:
        while True:
            await self._kick.wait()
            self._kick.clear()
            want = self.wanted()
            if want == self._shown or self.driver is None or not self.driver.connected:
                continue  # a reconnection kicks again
            try:
                ok = await self.driver.send(*want)
            except Exception as exc:  # DisplayError / ProtocolError: a bug, logged, never fatal
                log.error("jackpot display refused %s: %s", want, exc)
                ok = False
            if ok:
                self._shown = want
