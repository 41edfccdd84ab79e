"""Shoe events the journal could not commit are asked for again, and taken in order (issue 14 items 1 and 3;
docs/protocol.md §5a).

A shoe event whose commit failed did not happen: the core is put back and the event is not acknowledged as
committed. The shoe still holds it. Once the journal writes again, the table asks the shoe for every event after
the last committed one (``ShoeDriver.resend_after``), and until then it takes no later event of that boot of the
shoe: committing a later card first would put the cards out of order, and the one the shoe sends again would
then be a duplicate or a gap. Events the event pump had already taken from the driver when the shoe was asked
again come again too: they are dropped, not committed twice (a card line with a separate reader drops the
shoe's events it has queued after the point: drivers/card_line.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from controller.table.state import ShoeDevice
from drivers import events as ev

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ShoeResend:
    pending: tuple[int, int] | None = None  # (boot id, event no) committed up to, when a commit first failed
    asked: int = 0  # how many times the shoe was asked again; the pump tags each batch it takes with it
    dropped: int = 0  # numbered events not taken because they come again

    def commit_failed(self, events: list[ev.DeviceEvent], device: ShoeDevice) -> None:
        """Numbered shoe events were given and not committed: hold every later one until the shoe is asked."""
        if self.pending is None and any(e.event_no for e in events):
            self.pending = device.committed

    def takes(self, event: ev.DeviceEvent, taken: int, device: ShoeDevice) -> bool:
        """Whether the core may take this event now (``taken``: ``asked`` when the pump took it)."""
        if not event.event_no:  # the driver's own LinkUp/LinkDown/Identified: not numbered, never resent
            return True
        boot, committed = device.committed
        if self.pending is not None and boot == self.pending[0]:
            reason = "earlier events of the shoe are not committed yet"
        elif taken != self.asked and event.event_no > committed:
            reason = "taken before the shoe was asked again"
        else:
            return True
        self.dropped += 1
        log.warning("shoe event #%d not taken (%s): the shoe sends it again", event.event_no, reason)
        return False

    def ask_again(self, shoe: Any) -> None:
        """The journal writes again: the shoe sends every event after the committed point (a live link at once,
        a link that is down at its next HELLO)."""
        if self.pending is None:
            return
        point, self.pending = self.pending, None
        resend = getattr(shoe, "resend_after", None)
        if resend is None:
            return
        if resend(*point):
            self.asked += 1
            return
        # Another boot of the shoe since (its events of the old boot are gone with it), or nothing newer
        # delivered: nothing to ask. A card lost with a reboot shows in the core's card count (resync).
        log.error("shoe not asked again for the events after #%d of boot %08x", point[1], point[0])
