"""The emulated shoe's numbered events (docs/protocol.md §5a): every event since boot gets the next number and
goes over the reliable link; the ones not yet acknowledged and at least the last REPLAY_BUFFER acknowledged
ones are kept, oldest first, so that a HELLO's resume point gets every event after it sent again."""

from __future__ import annotations

import asyncio
from collections import deque

from drivers import events as ev
from drivers.link import ReliableLink
from drivers.protocol import messages as msg

REPLAY_BUFFER = 4096  # acknowledged events kept for a replay (>= msg.REPLAY_BUFFER_MIN, docs/protocol.md §5a)


class NumberedEvents:
    def __init__(self, link: ReliableLink) -> None:
        self.link = link
        # every event since boot that is not acknowledged, and at least the last REPLAY_BUFFER acknowledged
        # ones, oldest first: (event_no, type, payload)
        self.event_no = 0
        self.acked_upto = 0  # every event up to this number has been acknowledged (in order: stop-and-wait)
        self.history: deque[tuple[int, int, bytes]] = deque()
        self.replays = 0  # HELLOs that asked for events again (state op)
        self.replayed_events = 0

    def send(self, event: ev.DeviceEvent) -> None:
        """The event gets the next number, is kept, and goes over the link (retransmitted until acked)."""
        self.event_no += 1
        type_, payload = msg.encode_numbered_event(self.event_no, event)
        self.history.append((self.event_no, type_, payload))
        self._send(self.event_no, type_, payload)

    def replay(self, hello: msg.Hello, boot_id: int) -> None:
        """docs/protocol.md §5a: every numbered event after the host's resume point goes (again), in order;
        the ones up to it are committed by the host and never sent again. A resume point from another boot
        of this device means the host holds none of this boot's events; boot id 0: the host asks for none."""
        if hello.resume_boot_id == 0:
            return
        after = hello.resume_after if hello.resume_boot_id == boot_id else 0
        self.link.drop_tagged()
        again = [(no, t, p) for no, t, p in self.history if no > after]
        for no, t, p in again:
            self._send(no, t, p)
        self.replays += 1
        self.replayed_events += sum(1 for no, _, _ in again if no <= self.acked_upto)

    def _send(self, no: int, type_: int, payload: bytes) -> None:
        fut = self.link.send(type_, payload, tag=no)
        fut.add_done_callback(lambda f, no=no: self._acked(no, f))

    def _acked(self, no: int, fut: asyncio.Future[None]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            return  # dropped for a replay (queued again) or the link closed
        self.acked_upto = max(self.acked_upto, no)
        # the history is contiguous (event numbers without holes), so the acknowledged ones are a prefix
        while self.history and self.acked_upto - self.history[0][0] + 1 > REPLAY_BUFFER:
            self.history.popleft()
