"""The published events' hash chain: what lets the floor prove an archived event is the table's (issue 25).

Every envelope the table publishes from its outbox carries ``prev`` (the chain value of the event before it;
64 zeros before the first) and ``chain``::

    chain_n = SHA-256(bytes.fromhex(chain_{n-1}) || canonical envelope bytes without the "chain" field)

The envelope text is canonical JSON (keys sorted), so ``"chain"`` is its first key: the bytes without it are
``{`` followed by what comes after ``{"chain":"<64 hex>",``. The table computes it when it commits the event
(controller/journal/transaction.py) and records the head after each transaction in the ``published`` record
(chained in the journal, so it survives restarts and prunes); a re-fetch resends the kept envelope byte-identical.
Every signed audit checkpoint signs the head (``last_event_id`` + ``event_chain``, controller/audit/checkpoint.py).

A consumer proves events by walking BACK from a signed head: the event with the checkpoint's ``last_event_id``
must carry ``chain`` = the signed head and hash to it; the one before must carry ``chain`` = that event's
``prev``; and so on (floor/archive/verify_events.py). Walking forward proves nothing: anyone can compute a
``chain`` over a forged envelope from a public ``prev``."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass

from controller.journal.records import PUBLISHED_KIND

EVENT_GENESIS = "0" * 64
_HEAD = re.compile(rb'^\{"chain":"([0-9a-f]{64})",')
_HEAD_LEN = len('{"chain":"",') + 64


def link(prev: str, unchained: bytes) -> str:
    """chain_n from chain_{n-1} and the envelope's bytes without the chain field."""
    return hashlib.sha256(bytes.fromhex(prev) + unchained).hexdigest()


def chained_text(prev: str, unchained: str) -> tuple[str, str]:
    """(envelope text with its ``chain`` field first, the chain value) for a canonical envelope ``unchained``
    that already names ``prev``."""
    value = link(prev, unchained.encode("utf-8"))
    return f'{{"chain":"{value}",{unchained[1:]}', value


@dataclass(frozen=True, slots=True)
class ChainedEnvelope:
    chain: str  # the value the envelope claims
    prev: str  # the value it names for the event before it
    computed: str  # what its bytes hash to: equal to ``chain`` for an envelope made by a table

    @property
    def self_consistent(self) -> bool:
        return self.computed == self.chain


def read_chain(raw: bytes, prev: object) -> ChainedEnvelope | None:
    """The chain fields of an envelope as received (``prev`` as parsed from it), or None when it carries none
    in the table's form (legacy or forged: it can never be proven)."""
    m = _HEAD.match(raw)
    if m is None or not isinstance(prev, str) or len(prev) != 64:
        return None
    try:
        bytes.fromhex(prev)
    except ValueError:
        return None
    unchained = b"{" + raw[_HEAD_LEN:]
    return ChainedEnvelope(m.group(1).decode(), prev, link(prev, unchained))


def last_head(conn: sqlite3.Connection) -> str:
    """The chain value of the last event published, from the newest ``published`` record (EVENT_GENESIS for a
    journal that has none, or was written before the chain existed)."""
    row = conn.execute(
        "SELECT data FROM records WHERE kind = ? ORDER BY seq DESC LIMIT 1", (PUBLISHED_KIND,)
    ).fetchone()
    if row is None:
        return EVENT_GENESIS
    try:
        head = json.loads(row[0]).get("chain")
    except ValueError:
        return EVENT_GENESIS
    return head if isinstance(head, str) and len(head) == 64 else EVENT_GENESIS
