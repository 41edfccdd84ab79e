"""The inputs that arrive on their own, for the table shell: the shoe's event pump (bursts committed in one
transaction), the ticker (lid deadline), and the GPIO edges (dealer buttons, lid switch; the chip slots are the
jackpot's: controller/jackpot/wiring.py). Part of ``TableController`` (controller.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from controller.actions import BUTTON_ACTIONS
from controller.table import inputs
from controller.table.effects import Rejected
from controller.table.journal_io import JournalWriteFailed
from drivers import events as ev

log = logging.getLogger("controller.table.controller")  # the shell's one logger


class InputFeeds:
    """Attributes: see ``TableController.__init__``."""

    async def _pump(self, burst: int = 64) -> None:
        async for event in self.shoe.events():
            drain = getattr(self.shoe, "drain_events", None)
            more = drain(burst - 1) if drain is not None else []
            try:
                committed = await self.handle_events([event, *more], taken=self.resend.asked)
            except Exception:  # a bug: logged; the pump goes on (its death would stop the watchdog)
                log.exception("shoe events failed")
                committed = False
            if committed:
                self.events_committed([event, *more])

    def events_committed(self, events: list[ev.DeviceEvent]) -> None:
        """Called only after the events' COMMIT (never after a failed one): where the shoe may be told they
        are safe (issue 14 item 1, ack after commit). Nothing to do while the driver acks on arrival."""

    async def _ticker(self, period: float = 0.25) -> None:
        """Ticks are journaled only when a deadline is due, so an idle table writes nothing."""
        while True:
            await asyncio.sleep(period)
            deadline = self.core.lid.deadline
            if deadline is not None and self._clock() >= deadline:
                try:
                    await self.tick()
                except JournalWriteFailed:
                    pass  # the journal_io fault is raised (and ends the lid cycle)
                except Exception:
                    log.exception("tick failed")

    def _watch_gpio(self) -> None:
        loop = asyncio.get_running_loop()

        def on_edge(name: str, value: bool) -> None:  # may run on another thread
            loop.call_soon_threadsafe(lambda: loop.create_task(self._gpio_edge(name, value)))

        for name in (*BUTTON_ACTIONS, "lid_switch"):
            with contextlib.suppress(Exception):
                self.board.on_edge(name, on_edge)

    async def _gpio_edge(self, name: str, value: bool) -> None:
        try:
            if name in BUTTON_ACTIONS:
                if value:
                    await self.dealer_input(BUTTON_ACTIONS[name], {})
            else:
                await self.submit_or_hold(inputs.GpioInput(name, value))
        except Rejected as exc:
            log.info("button %s rejected: %s", name, exc.reason)
        except Exception:
            log.exception("GPIO edge %s failed", name)
