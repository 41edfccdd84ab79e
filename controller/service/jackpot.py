"""The progressive jackpot's I/O in the service (PT-2001 r.38-50), around the pure ``TableJackpot``: the
``[jackpot]`` config into ``open_table``, the chip-slot sensors (r.41a) and the sign's link in as journaled
inputs, the sign fed from the committed state; with ``[jackpot] link``, the link's meter documents
(jackpot_link.py, ``LinkWatch``) and the link's meter on the sign."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from controller.config import TableConfig
from controller.effects import Rejected
from controller.jackpot.config import CHIP_SLOT_PREFIX
from controller.mqtt.link import MqttLink
from controller.service.jackpot_link import LinkWatch
from controller.shell.controller import TableController
from controller.table import inputs
from drivers.aio import cancel_tasks
from drivers.serial_port import resolve_port

log = logging.getLogger("tablectl.service")  # the service's log, as before the move


class JackpotWiring:
    """The jackpot's I/O around the pure core (``controller.jackpot.table``): the ``[jackpot]`` config into
    ``open_table``, the chip-slot sensors (r.41a) and the sign's link in as journaled inputs, and the sign
    fed from the committed state after every commit (the meter as it increments, WIN on a hit, a fault text).
    """

    FAULT_TEXT = "JACKPOT CLOSED"
    TABLE_CHARS = 24  # of a table id on the sign (drivers/display/protocol.py PND)

    def __init__(
        self, config: TableConfig, table: TableController, board: Any, mqtt: MqttLink | None = None
    ) -> None:
        self.config = config
        self.table = table
        self.board = board
        self.mqtt = mqtt
        self.link_watch: LinkWatch | None = None  # with [jackpot] link: the link's meter documents
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
        parsed = self.config.jackpot.parsed
        if parsed is not None and parsed.linked and self.config.jackpot.enabled and self.mqtt is not None:
            self.link_watch = LinkWatch(parsed, self.config.table.id, self.table, self.mqtt, self._kick.set)
            await self.link_watch.start()
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
        if self.link_watch is not None:
            await self.link_watch.stop()
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
        linked = getattr(jp, "linked", None)
        if linked is not None and getattr(jp, "enabled", False):
            return self._wanted_linked(linked)
        if meter is None or not getattr(jp, "enabled", False):
            return ("FLT", self.FAULT_TEXT)
        if meter.pending:  # the largest frozen award (r.49: until paid)
            hit = max(meter.pending, key=lambda h: (h.amount, -h.seat))
            return ("WIN", hit.seat, hit.amount, meter.currency)
        return ("MTR", meter.display_value, meter.currency)

    def _wanted_linked(self, linked: Any) -> tuple[Any, ...]:
        """A linked table's sign: the link's meter from the newest valid document (so never behind by more than
        one of its controller's heartbeats), this table's win while it is unpaid (r.49), "prize pending at table
        T" while the link has a hit pending anywhere, "progressive unavailable" when the link is down."""
        doc = self.link_watch.latest if self.link_watch is not None else None
        if not linked.up or doc is None:
            return ("NAV",)
        own = [h for h in linked.hits if h.amount is not None]
        if own:
            hit = max(own, key=lambda h: (h.amount, -h.seat))
            return ("WIN", hit.seat, hit.amount, doc.currency)
        if doc.pending:
            first = min(doc.pending, key=lambda h: h.order)
            return ("PND", first.table[: self.TABLE_CHARS], doc.meter_minor, doc.currency)
        return ("MTR", doc.meter_minor, doc.currency)

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
