"""One journal transaction: records appended to the chain, outbox events queued (with their retained state),
and before COMMIT the ``published`` record chaining the digest of every event queued (and the head of the published
events' hash chain after them, controller/journal/event_chain.py). Opened by
``Journal.transaction()`` (controller/journal/store.py), which commits it or rolls it back.

The rows are built in Python as each record or event comes and written in a few statements of many rows each
(issue 44: a statement per row cost a card's commit more than the rows): the records before any other statement of
the transaction (``execute``) or read of the journal (``write_records``), and before COMMIT; the events, their
outbox ids and the retained documents before COMMIT (``_chain_events``)."""

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
        self._rows: list[tuple[int, float, str, str, str, str]] = []  # records not written yet
        self._retained: dict[str, str] = {}  # topic -> the latest payload of this transaction

    def append(self, kind: str, data: dict[str, Any]) -> Record:
        j = self._j
        seq = j._last_seq + 1
        ts = j._clock()
        text = canonical(data)
        digest = chain_hash(j._last_hash, seq, ts, kind, text)
        self._rows.append((seq, ts, kind, text, j._last_hash, digest))
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
                {
                    "event_id": event_id,
                    "ts": ts,
                    "type": event_type,
                    "table": j.table_id,
                    "data": data,
                    "prev": prev,
                }
            )
        else:  # the same text canonical() gives: keys in sorted order, "data" first
            unchained = (
                f'{{"data":{data_text},"event_id":{event_id},"prev":"{prev}","table":{_quoted(j.table_id)},'
                f'"ts":"{ts}","type":{_quoted(event_type)}}}'
            )
        # the published events' hash chain (controller/journal/event_chain.py): "chain" first, as canonical()
        payload, j._last_chain = chained_text(prev, unchained)
        if retain:
            self._retained[topic] = payload
        j._last_event_id = event_id
        row = OutboxRow(event_id, topic, payload, qos, retain)
        self.events.append(row)
        self._digests.append(event_digest(topic, payload, qos, retain))
        return row

    def _chain_events(self) -> None:
        """Before COMMIT: one ``published`` record with the digest of every event of this transaction (their ids
        are consecutive), the envelopes kept in ``events`` (for the publisher and for re-fetch), their ids in the
        outbox (pending until the broker's ack) and the retained documents."""
        first, last = self.events[0].event_id, self.events[-1].event_id
        rec = self.append(
            PUBLISHED_KIND,
            {"first_event_id": first, "sha256": list(self._digests), "chain": self._j._last_chain},
        )
        ts = self._j._clock()
        conn = self._conn
        conn.executemany(
            "INSERT OR REPLACE INTO events(event_id, ts, topic, payload, qos, retain, seq)"
            " VALUES (?,?,?,?,?,?,?)",
            [(r.event_id, ts, r.topic, r.payload, r.qos, int(r.retain), rec.seq) for r in self.events],
        )
        conn.execute(
            "INSERT INTO outbox(event_id) SELECT event_id FROM events WHERE event_id BETWEEN ? AND ?",
            (first, last),
        )
        if self._retained:
            conn.executemany(
                "INSERT INTO retained(topic, payload) VALUES (?, ?) "
                "ON CONFLICT(topic) DO UPDATE SET payload = excluded.payload",
                self._retained.items(),
            )

    def write_records(self) -> None:
        """Write the records appended so far (``append`` only builds them): before any other statement and read."""
        if self._rows:
            self._conn.executemany(
                "INSERT INTO records(seq, ts, kind, data, prev_hash, hash) VALUES (?,?,?,?,?,?)", self._rows
            )
            self._rows.clear()

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """For modules that keep auxiliary tables in the journal database (e.g. used command nonces); the records
        appended before it are written first."""
        self.write_records()
        return self._conn.execute(sql, params)
