"""The outbox publisher: journal outbox → broker, in event_id order, nothing lost.

A row leaves the outbox only when the broker acknowledged it (PUBACK → paho ``on_publish`` with the mid →
asyncio loop → ``journal.outbox_ack``; the delete rides in the next commit or follows within
``ACK_FLUSH_AFTER_S``). At most ``window`` rows are in flight. After every (re)connect every row
still in the outbox is sent again from the oldest, so a broker outage of any length or a controller restart loses
nothing; consumers dedupe by ``event_id`` (QoS 1 is at-least-once) and see the ids in order. Only then are the
retained state topics republished (for a broker that lost them), and only those whose latest row had already
left the outbox: a newer row just went out in order, and an old one sent first would overwrite it.

Nothing is published that the journal's chain does not record (``Journal.is_chained``): an outbox row or retained
document inserted or edited in the database file by anyone but this program is refused, counted (``forged``),
logged and reported through ``on_forged`` (the service raises a critical alert), never sent under the table's
identity. Rows this process committed itself are checked against the digests it computed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from controller.journal.store import Journal, JournalError, OutboxRow, Transaction
from controller.mqtt.link import MqttLink

log = logging.getLogger(__name__)

ACK_FLUSH_AFTER_S = 0.5  # an acknowledged row is deleted at most this long after its PUBACK


@dataclass(slots=True)
class PublisherCounters:
    published: int = 0  # PUBLISH packets handed to paho (first sends and resends)
    acked: int = 0  # rows removed from the outbox after a PUBACK
    resent: int = 0  # rows sent again after a reconnect
    refused: int = 0  # PUBACKs with a failure reason code (e.g. ACL): the row stays in the outbox
    retained_republished: int = 0
    forged: int = 0  # rows / retained documents refused because the chain does not record them


class OutboxPublisher:
    def __init__(self, journal: Journal, link: MqttLink, *, window: int = 32) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self.journal = journal
        self.link = link
        self.window = window
        self.counters = PublisherCounters()
        self._inflight: dict[int, int] = {}  # mid -> event_id
        self._last_sent = 0  # highest event_id handed to the current session
        self._high_water = 0  # highest event_id ever sent by this process (to count resends)
        self._republish_below: int | None = None  # after a connect: republish retained rows older than this
        self._pump_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_timer: asyncio.TimerHandle | None = None
        self._forged_seen: set[tuple[str, int]] = set()  # reported once per process
        # Called (on the loop, never inside a send) with (topic, event_id, reason) for each refused row.
        self.on_forged: Callable[[str, int, str], None] | None = None

    def start(self) -> None:
        """Wire to the link and the journal; call from the asyncio loop before ``link.start()``."""
        self._loop = asyncio.get_running_loop()
        self.link.on_connected(self._on_connected)
        self.link.on_disconnected(self._on_disconnected)
        self.link.on_puback(self._on_puback)
        self.journal.add_commit_listener(self._on_commit)

    @property
    def outbox_size(self) -> int:
        return self.journal.outbox_size()

    @property
    def in_flight(self) -> int:
        return len(self._inflight)

    def stats(self) -> dict[str, int]:
        c = self.counters
        return {
            "published": c.published,
            "acked": c.acked,
            "resent": c.resent,
            "refused": c.refused,
            "forged": c.forged,
            "in_flight": self.in_flight,
            "outbox": self.outbox_size,
        }

    def wake(self) -> None:
        if self._loop is None or self._pump_scheduled:
            return
        self._pump_scheduled = True
        self._loop.call_soon(self._pump)

    # ---- link events ----
    def _on_connected(self) -> None:
        # The session is new (clean start): whatever was in flight is unknown, so start again from the outbox.
        self._inflight.clear()
        self._last_sent = 0
        oldest = self.journal.outbox_pending(0, 1)
        self._republish_below = oldest[0].event_id if oldest else self.journal.last_event_id + 1
        self.wake()

    def _republish_retained(self, below: int) -> None:
        """Once the outbox has been sent again after a connect (so the ids a consumer sees stay in order): the
        retained rows older than ``below``, the outbox's oldest id at the connect."""
        for topic, payload in self.journal.retained_state().items():
            event_id = _event_id(payload)
            if event_id >= below:
                continue  # its latest row was still in the outbox and has just been sent, in order
            if not self.journal.is_chained(event_id, topic, payload, 1, True):
                self._forged("retained", topic, event_id)
                continue
            if self.link.publish(topic, payload, qos=1, retain=True) is not None:
                self.counters.retained_republished += 1

    def _on_disconnected(self) -> None:
        self._inflight.clear()
        self._last_sent = 0

    def _on_puback(self, mid: int, ok: bool, reason: str) -> None:
        event_id = self._inflight.pop(mid, None)
        if event_id is None:
            return  # retained republish, status, command response: not outbox rows
        if not ok:
            self.counters.refused += 1
            log.error("mqtt: broker refused event %d (%s); it stays in the outbox", event_id, reason)
        else:
            self._acked(event_id)
        self.wake()

    # ---- the pump (asyncio loop only) ----
    def _acked(self, event_id: int) -> None:
        """The row leaves the outbox now (never counted or sent again); the journal deletes it with the next
        commit, or ``_flush_deletes`` does on a quiet table."""
        self.journal.outbox_ack([event_id])
        self.counters.acked += 1
        if self._flush_timer is None and self._loop is not None:
            self._flush_timer = self._loop.call_later(ACK_FLUSH_AFTER_S, self._flush_deletes)

    def _flush_deletes(self) -> None:
        """The acknowledged rows' deletes ride in the table's next commit; on a quiet table, in their own."""
        self._flush_timer = None
        try:
            self.journal.flush_acks()
        except JournalError:  # inside someone's transaction: that commit deletes them
            pass
        except sqlite3.Error as exc:  # the journal was closed under us at shutdown: the rows are resent
            log.debug("mqtt: outbox deletes not flushed: %s", exc)

    def _pump(self) -> None:
        self._pump_scheduled = False
        if not self.link.connected:
            return
        room = self.window - len(self._inflight)
        while room > 0:
            rows = self.journal.outbox_pending(self._last_sent, room)
            if not rows:
                below, self._republish_below = self._republish_below, None
                if below is not None:
                    self._republish_retained(below)
                return
            if not self._send(self._chained_only(rows)):
                return  # link went down; the next on_connected starts over from the outbox
            self._last_sent = max(self._last_sent, rows[-1].event_id)  # refused rows are passed over
            room = self.window - len(self._inflight)

    def _chained_only(self, rows: list[OutboxRow]) -> list[OutboxRow]:
        """The rows the chain records; the others are refused and reported (never sent)."""
        good = []
        for row in rows:
            if self.journal.is_chained(row.event_id, row.topic, row.payload, row.qos, row.retain):
                good.append(row)
            else:
                self._forged("outbox", row.topic, row.event_id)
        return good

    def _forged(self, where: str, topic: str, event_id: int) -> None:
        if (where, event_id) in self._forged_seen:
            return
        self._forged_seen.add((where, event_id))
        self.counters.forged += 1
        reason = f"{where} row for event {event_id} on {topic!r} is not recorded in the journal's chain"
        log.critical("mqtt: refusing to publish: %s", reason)
        if self.on_forged is not None and self._loop is not None:
            self._loop.call_soon(self.on_forged, topic, event_id, reason)

    def _on_commit(self, tx: Transaction) -> None:
        """Right after a COMMIT: its rows go out at once when they are the next in order and the window has
        room (the common case: no outbox query, no extra loop pass on the card's way to the broker);
        otherwise the pump sends them, in order, from the outbox."""
        rows = tx.events
        if not rows:
            return
        direct = (
            self.link.connected
            and rows[0].event_id == self._last_sent + 1
            and len(self._inflight) + len(rows) <= self.window
        )
        if not (direct and self._send(rows)):
            self.wake()

    def _send(self, rows: list[OutboxRow]) -> bool:
        """Hand rows to paho in order; False if the link went down on the way."""
        for row in rows:
            mid = self.link.publish(row.topic, row.payload, qos=row.qos, retain=row.retain)
            if mid is None:
                return False
            self._last_sent = row.event_id
            self.counters.published += 1
            if row.event_id <= self._high_water:
                self.counters.resent += 1
            self._high_water = max(self._high_water, row.event_id)
            if row.qos == 0:
                self._acked(row.event_id)  # no PUBACK will come
            else:
                self._inflight[mid] = row.event_id
        return True


def _event_id(payload: str) -> int:
    try:
        return int(json.loads(payload)["event_id"])
    except (ValueError, KeyError, TypeError):
        return 0
