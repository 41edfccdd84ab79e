"""One journal transaction: records appended to the chain, outbox events queued (with their retained state),
and before COMMIT the ``published`` record chaining the digest of every event queued (and the head of the published
events' hash chain after them, controller/journal/event_chain.py). Opened by
``Journal.transaction()`` (controller/journal/store.py), which commits it or rolls it back."""

from __future__ import annotations

import functools
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from controller.canonical import canonical
from controller.journal.event_chain import chained_text
from controller.journal.records import PUBLISHED_KIND, OutboxRow, Record, chain_hash, event_digest

if TYPE_CHECKING:
    from controller.journal.store import Journal


def iso_ts(ts: float) -> str:
    ms = round(ts * 1000)
    return _iso_second(ms // 1000) + f".{ms % 1000:03d}Z"


@functools.lru_cache(maxsize=256)
def _quoted(text: str) -> str:
    """A table id or event type as canonical JSON: a few names, quoted once each instead of per event."""
    return canonical(text)


@functools.lru_cache(maxsize=4)
def _iso_second(second: int) -> str:
    """The date and time to the second: formatted once a second, not once per event."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


class Transaction:
    """One atomic unit: records, outbox events and retained state all commit together."""

    def __init__(self, journal: Journal) -> None:
        self._j = journal
        self._conn = journal._conn
        self.records: list[Record] = []
        self.events: list[OutboxRow] = []
        self._digests: list[str] = []  # event_digest of each row in ``events``

    def append(self, kind: str, data: dict[str, Any]) -> Record:
        j = self._j
        seq = j._last_seq + 1
        ts = j._clock()
        text = canonical(data)
        digest = chain_hash(j._last_hash, seq, ts, kind, text)
        self._conn.execute(
            "INSERT INTO records(seq, ts, kind, data, prev_hash, hash) VALUES (?,?,?,?,?,?)",
            (seq, ts, kind, text, j._last_hash, digest),
        )
        rec = Record(seq, ts, kind, data, j._last_hash, digest)
        j._last_seq, j._last_hash = seq, digest
        self.records.append(rec)
        return rec

    def publish(
        self,
        topic: str,
        event_type: str,
        data: dict[str, Any] | None = None,
        *,
        retain: bool = False,
        qos: int = 1,
        data_text: str | None = None,
    ) -> OutboxRow:
        """Queue an event for MQTT (topic relative to the table prefix). Sent only after COMMIT.
        ``data_text``: ``data`` already in canonical JSON (the core has it for the state documents it
        compares), spliced into the envelope instead of encoding the document a second time."""
        j = self._j
        event_id = j._last_event_id + 1
        ts = iso_ts(j._clock())
        prev = j._last_chain
        if data_text is None:
            if data is None:
                raise ValueError("publish needs data or data_text")
            unchained = canonical(
                {"event_id": event_id, "ts": ts, "type": event_type, "table": j.table_id, "data": data}
                | {"prev": prev}
            )
        else:  # the same text canonical() gives: keys in sorted order, "data" first
            unchained = (
                f'{{"data":{data_text},"event_id":{event_id},"prev":"{prev}","table":{_quoted(j.table_id)},'
                f'"ts":"{ts}","type":{_quoted(event_type)}}}'
            )
        # the published events' hash chain (controller/journal/event_chain.py): "chain" first, as canonical()
        payload, j._last_chain = chained_text(prev, unchained)
        self._conn.execute(
            "INSERT INTO outbox(event_id, topic, payload, qos, retain) VALUES (?,?,?,?,?)",
            (event_id, topic, payload, qos, int(retain)),
        )
        if retain:
            self._conn.execute(
                "INSERT INTO retained(topic, payload) VALUES (?, ?) "
                "ON CONFLICT(topic) DO UPDATE SET payload = excluded.payload",
                (topic, payload),
            )
        j._last_event_id = event_id
        row = OutboxRow(event_id, topic, payload, qos, retain)
        self.events.append(row)
        self._digests.append(event_digest(topic, payload, qos, retain))
        return row

    def _chain_events(self) -> None:
        """Before COMMIT: one ``published`` record with the digest of every outbox row of this transaction (their
        ids are consecutive), and the rows kept in ``events`` for re-fetch."""
        first = self.events[0].event_id
        rec = self.append(
            PUBLISHED_KIND,
            {"first_event_id": first, "sha256": list(self._digests), "chain": self._j._last_chain},
        )
        ts = self._j._clock()
        self._conn.executemany(
            "INSERT OR REPLACE INTO events(event_id, ts, topic, payload, qos, retain, seq)"
            " VALUES (?,?,?,?,?,?,?)",
            [(r.event_id, ts, r.topic, r.payload, r.qos, int(r.retain), rec.seq) for r in self.events],
        )

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """For modules that keep auxiliary tables in the journal database (e.g. used command nonces)."""
        return self._conn.execute(sql, params)
