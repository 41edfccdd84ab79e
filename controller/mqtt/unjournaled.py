"""Messages the table must send although its journal cannot be written (issue 14 item 3).

Everything else goes journal → outbox → broker. When a journal write fails, the table goes into the
``journal_io`` fault, and the floor must learn it at once: its state documents, the ``events/fault`` and the
critical alert cannot wait in an outbox on a disk that takes nothing. They are published directly, in an
envelope that says so: ``"journaled": false`` and no ``event_id`` (an id belongs to a journaled event only).
The same messages are journaled and published again through the outbox, with their ids, once the journal
writes again (docs/mqtt.md "Messages not journaled").

The retained ones are sent again after every reconnect, after the outbox's own retained republish (which
would otherwise put back the last journaled state), until the journal has taken them (``forget``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from controller.canonical import canonical
from controller.journal.store import iso_ts
from controller.mqtt.link import MqttLink

log = logging.getLogger(__name__)
REPUBLISH_AFTER_CONNECT_S = (1.0, 3.0)  # after the outbox publisher's retained republish


def envelope(table_id: str, event_type: str, data_text: str, ts: float) -> str:
    """Canonical JSON (keys sorted), like the outbox's envelope, with ``journaled: false`` for ``event_id``."""
    return (
        f'{{"data":{data_text},"journaled":false,"table":{canonical(table_id)},'
        f'"ts":"{iso_ts(ts)}","type":{canonical(event_type)}}}'
    )


class UnjournaledPublisher:
    def __init__(self, link: MqttLink, table_id: str, *, clock: Callable[[], float] = time.time) -> None:
        self.link = link
        self.table_id = table_id
        self.clock = clock
        self.retained: dict[str, str] = {}  # topic -> payload, until the journal has taken them
        self.sent = 0
        link.on_connected(self._on_connected)

    def publish(
        self, topic: str, event_type: str, data: dict[str, Any] | str, *, retain: bool = False
    ) -> None:
        text = data if isinstance(data, str) else canonical(data)
        payload = envelope(self.table_id, event_type, text, self.clock())
        if retain:
            self.retained[topic] = payload
        if self.link.publish(topic, payload, qos=1, retain=retain) is not None:
            self.sent += 1

    def forget(self) -> None:
        """The journal took them: the outbox's copies (with their ids) supersede these."""
        self.retained.clear()

    def _on_connected(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for delay in REPUBLISH_AFTER_CONNECT_S:
            loop.call_later(delay, self._republish)

    def _republish(self) -> None:
        for topic, payload in list(self.retained.items()):
            self.link.publish(topic, payload, qos=1, retain=True)
