"""A table whose card reader is a separate USB device (docs/reader.md): the shoe and the reader as ONE device
to the table controller. Cards come from the reader; lid, jam, shuffle, counts, cut and warning card from the
shoe. Both sets of events go into the same event path (``events()``/``drain_events``) the controller pumps.

Decisions (docs/reader.md):
- The shoe's own ``CardOut``/``CardUnreadable`` are ignored (counted, logged): a card is counted once, from the
  one reader the configuration names; two readers of one card would deal it twice.
- The card line is up only while both are: either one's ``LinkDown`` goes in (its reason names the part), so an
  unplugged reader is the link fault (lid locked, dealing refused, PT-2001 r.51) until both are back and a
  supervisor clears it; ``LinkUp`` goes in once both are up.
- A reader's ``DeviceError`` goes in with "card reader:" in front of its text.
Everything else (commands, resume, ``connected``) is the shoe's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from drivers import events as ev
from drivers.aio import cancel_tasks, drain_queue
from drivers.usb_reader import UsbCardReader

log = logging.getLogger(__name__)

CARD_EVENTS = (ev.CardOut, ev.CardUnreadable)


class ShoeWithReader:
    def __init__(self, shoe: Any, reader: UsbCardReader) -> None:
        self.shoe = shoe
        self.reader = reader
        self.ignored_shoe_cards = 0  # the shoe's own card events, not used while a reader is configured
        self._queue: asyncio.Queue[ev.DeviceEvent] = asyncio.Queue()
        self._up = {"shoe": False, "reader": False}
        self._tasks: list[asyncio.Task[None]] = []

    def __getattr__(self, name: str) -> Any:  # command, resume_after, ...: the shoe's
        return getattr(self.shoe, name)

    @property
    def connected(self) -> bool:
        return bool(self.shoe.connected and self.reader.connected)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._forward("shoe", self.shoe.events()), name="card-line-shoe"),
            loop.create_task(self._forward("reader", self.reader.events()), name="card-line-reader"),
        ]
        await self.reader.start()
        await self.shoe.start()

    async def stop(self) -> None:
        await cancel_tasks(self._tasks)
        self._tasks.clear()
        await self.reader.stop()
        await self.shoe.stop()

    def resend_after(self, boot_id: int, event_no: int) -> bool:
        """The shoe's (docs/protocol.md §5a); the shoe events after the point already forwarded into the card
        line's queue are dropped as well (they come again), the reader's (not numbered) stay."""
        asked = bool(self.shoe.resend_after(boot_id, event_no))
        if asked:
            ev.drop_queued_after(self._queue, event_no)
        return asked

    def dead_tasks(self) -> list[str]:
        """Forwarding tasks that ended (a part's event stream failed): the service reports them (watchdog)."""
        return [t.get_name() for t in self._tasks if t.done()]

    async def events(self) -> AsyncIterator[ev.DeviceEvent]:
        while True:
            yield await self._queue.get()

    def drain_events(self, limit: int) -> list[ev.DeviceEvent]:
        return drain_queue(self._queue, limit)

    async def _forward(self, part: str, source: AsyncIterator[ev.DeviceEvent]) -> None:
        try:
            async for event in source:
                for out in self.translate(part, event):
                    self._queue.put_nowait(out)
        except Exception:  # the task ends: dead_tasks() names it, the service's watchdog restarts the service
            log.critical("card line: the %s's events failed", part, exc_info=True)

    def translate(self, part: str, event: ev.DeviceEvent) -> list[ev.DeviceEvent]:
        """What one part's event means for the card line (pure but for the link flags and the counter)."""
        if isinstance(event, ev.LinkUp):
            self._up[part] = True
            return [event] if all(self._up.values()) else []
        if isinstance(event, ev.LinkDown):
            self._up[part] = False
            what = "card reader" if part == "reader" else "shoe"
            return [ev.LinkDown(reason=f"{what}: {event.reason or 'link down'}")]
        if part == "shoe" and isinstance(event, CARD_EVENTS):
            self.ignored_shoe_cards += 1
            log.debug("shoe's own card event ignored (the separate reader deals): %r", event)
            return []
        if part == "reader" and isinstance(event, ev.DeviceError):
            return [ev.DeviceError(event.code, f"card reader: {event.text}"[:200])]
        return [event]
