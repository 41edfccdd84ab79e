"""A trivial in-memory shoe implementing ``ShoeDevice``, for unit tests of the layers above the driver.

shoe = FakeShoe(); await shoe.start()            # emits Identified + LinkUp
shoe.push(CardOut("A", "S", 1))                   # a device event the controller will see
shoe.results[OpenLid] = CommandResult(False, 0x11, "shuffling")   # scripted refusal
await shoe.command(OpenLid()); shoe.commands      # -> [OpenLid()]
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from drivers import events as ev
from drivers.link import LinkError, LinkStats


class FakeShoe:
    def __init__(self, identity: ev.Identified | None = None) -> None:
        self._identity = identity or ev.Identified(1, "FAKE", "0", "FAKE1", 6, True)
        self._queue: asyncio.Queue[ev.DeviceEvent] = asyncio.Queue()
        self._connected = False
        self.commands: list[ev.Command] = []
        self.results: dict[type[ev.Command], ev.CommandResult] = {}

    async def start(self) -> None:
        self.link_up()

    async def stop(self) -> None:
        self._connected = False

    def link_up(self) -> None:
        self._connected = True
        self.push(self._identity)
        self.push(ev.LinkUp())

    def link_down(self, reason: str = "fake") -> None:
        self._connected = False
        self.push(ev.LinkDown(reason=reason))

    def push(self, *events: ev.DeviceEvent) -> None:
        for e in events:
            self._queue.put_nowait(e)

    def drain_events(self, limit: int) -> list[ev.DeviceEvent]:
        out: list[ev.DeviceEvent] = []
        while len(out) < limit and not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out

    async def events(self) -> AsyncIterator[ev.DeviceEvent]:
        while True:
            yield await self._queue.get()

    async def next_event(self, timeout: float | None = None) -> ev.DeviceEvent:
        return await asyncio.wait_for(self._queue.get(), timeout)

    async def command(self, cmd: ev.Command) -> ev.CommandResult:
        if not self._connected:
            raise LinkError("fake shoe link is down")
        self.commands.append(cmd)
        return self.results.get(type(cmd), ev.CommandResult(True))

    @property
    def stats(self) -> LinkStats:
        return LinkStats(connected=self._connected)

    @property
    def identity(self) -> ev.Identified | None:
        return self._identity if self._connected else None

    @property
    def connected(self) -> bool:
        return self._connected
