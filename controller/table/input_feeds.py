"""The inputs that arrive on their own, for the table shell: the shoe's event pump (bursts committed in one
transaction), the ticker (lid deadline), and the GPIO edges (dealer buttons, lid switch; the chip slots are the
jackpot's: controller/service/jackpot.py). ``TableController`` (controller/shell/) holds one ``InputFeeds`` and starts
its tasks; the feeds reach the table only through ``FeedTarget``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from controller.actions import BUTTON_ACTIONS
from controller.effects import Rejected
from controller.table import inputs
from controller.table.journal_io import JournalWriteFailed
from drivers import events as ev

log = logging.getLogger("controller.table.controller")  # the shell's one logger


class FeedTarget(Protocol):
    """What the feeds need of the table (``TableController``)."""

    async def handle_events(self, events: list[ev.DeviceEvent], taken: int | None = None) -> bool: ...
    def events_committed(self, events: list[ev.DeviceEvent]) -> None: ...
    def resend_asked(self) -> int: ...
    def deadline(self) -> float | None: ...
    async def tick(self) -> None: ...
    async def dealer_input(self, action: str, args: dict[str, Any] | None = None) -> dict[str, Any]: ...
    async def submit_or_hold(self, inp: inputs.Input) -> dict[str, Any] | None: ...


class InputFeeds:
    def __init__(
        self,
        table: FeedTarget,
        shoe: Any | None,  # drivers.shoe.ShoeDevice
        board: Any | None,  # controller.gpio.GpioBoard
        clock: Callable[[], float],
    ) -> None:
        self._table = table
        self._shoe = shoe
        self._board = board
        self._clock = clock

    async def pump(self, burst: int = 64) -> None:
        """The shoe's events, a burst of those queued at a time, committed in one transaction."""
        assert self._shoe is not None
        async for event in self._shoe.events():
            drain = getattr(self._shoe, "drain_events", None)
            more = drain(burst - 1) if drain is not None else []
            try:
                committed = await self._table.handle_events([event, *more], taken=self._table.resend_asked())
            except Exception:  # a bug: logged; the pump goes on (its death would stop the watchdog)
                log.exception("shoe events failed")
                committed = False
            if committed:
                self._table.events_committed([event, *more])

    async def ticker(self, period: float = 0.25) -> None:
        """Ticks are journaled only when a deadline is due, so an idle table writes nothing."""
        while True:
            await asyncio.sleep(period)
            deadline = self._table.deadline()
            if deadline is not None and self._clock() >= deadline:
                try:
                    await self._table.tick()
                except JournalWriteFailed:
                    pass  # the journal_io fault is raised (and ends the lid cycle)
                except Exception:
                    log.exception("tick failed")

    def watch_gpio(self) -> None:
        assert self._board is not None
        loop = asyncio.get_running_loop()

        def on_edge(name: str, value: bool) -> None:  # may run on another thread
            loop.call_soon_threadsafe(lambda: loop.create_task(self.gpio_edge(name, value)))

        for name in (*BUTTON_ACTIONS, "lid_switch"):
            with contextlib.suppress(Exception):
                self._board.on_edge(name, on_edge)

    async def gpio_edge(self, name: str, value: bool) -> None:
        try:
            if name in BUTTON_ACTIONS:
                if value:
                    await self._table.dealer_input(BUTTON_ACTIONS[name], {})
            else:
                await self._table.submit_or_hold(inputs.GpioInput(name, value))
        except Rejected as exc:
            log.info("button %s rejected: %s", name, exc.reason)
        except Exception:
            log.exception("GPIO edge %s failed", name)
