"""What arrives on the floor broker, checked at the door before anything is stored.

Every string from outside is hostile: a message is accepted only if its topic is a table topic
(``casino/<site>/table/<id>/<rel>``, levels of safe characters) and, for an envelope, the payload is a bounded
JSON object with an integer ``event_id``, a well-formed ``ts``, a short lowercase ``type``, ``table`` equal to the
topic's table, an object ``data``, ``prev``/``chain`` both 64 hex or both absent (no NUL characters anywhere:
PostgreSQL's jsonb refuses them). Anything else becomes a ``Rejected`` with the reason, counted by the archive.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from controller.hex64 import HEX64
from controller.topics import (
    ALERT_TYPE,
    ALERTS_EVENTS,
    ALERTS_OPEN,
    ALERTS_OPEN_TYPE,
    EVENT_TYPES,
    STATE_TYPE,
)

MAX_PAYLOAD = 256 * 1024
MAX_DEPTH = 32
TOPICS_CACHED = 1 << 16  # a floor's topics: ~10 a table
CHECKPOINT_TOPIC = "audit/checkpoint"
CHECKPOINT_TYPE = "checkpoint"
SOFTWARE_TOPIC = "state/software"
_LEVEL = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
_TS = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\Z")
_TYPE = re.compile(r"^[a-z_]{1,32}\Z")
# up to six levels: cmd/replay/response/<user>/<the event's own two-level topic>
_REL = re.compile(r"^[a-z_]{1,32}(/[A-Za-z0-9_.-]{1,64}){0,5}\Z")
# the topics an envelope is first published on (controller/topics.py): what a re-fetched event may be filed under
_REPORTED = re.compile(r"^(state/[a-z_]{1,32}|events/[a-z_]{1,32}|alerts/(open|events)|audit/checkpoint)\Z")


@dataclass(frozen=True, slots=True)
class TableRef:
    site: str
    table_id: str

    @property
    def prefix(self) -> str:
        return f"casino/{self.site}/table/{self.table_id}"


@dataclass(frozen=True, slots=True)
class Envelope:
    table: TableRef
    topic: str | None  # relative topic; None when unknown (a state document re-fetched from an older table)
    event_id: int
    type: str
    ts: datetime
    data: dict[str, Any]
    raw: bytes
    source: str  # "live" | "replay"
    prev: str | None = (
        None  # the published events' hash chain (controller/journal/event_chain.py), if carried
    )
    chain: str | None = None
    # ``data`` as the JSON text it arrived in (the table's own form, no number with a fraction or exponent),
    # what the archive stores as jsonb instead of encoding ``data`` again; None: encode ``data``
    data_text: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Status:
    table: TableRef
    status: str  # "online" | "offline"


@dataclass(frozen=True, slots=True)
class ReplayClose:
    table: TableRef
    doc: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rejected:
    topic: str
    reason: str
    size: int


@dataclass(frozen=True, slots=True)
class Ignored:
    """Command traffic that crosses the floor broker: not the archive's to keep."""

    topic: str


Message = Envelope | Status | ReplayClose | Rejected | Ignored


@functools.lru_cache(maxsize=TOPICS_CACHED)
def _table_ref(site: str, table_id: str) -> TableRef:
    """One ``TableRef`` a table while it is remembered: the archive's sets and maps of a batch's tables then find
    each by identity, not by comparing its fields."""
    return TableRef(site, table_id)


@functools.lru_cache(maxsize=TOPICS_CACHED)
def split_topic(topic: str) -> tuple[TableRef, str] | None:
    """``casino/<site>/table/<id>/<rel>`` → (table, rel), or None for anything else (remembered for the
    ``TOPICS_CACHED`` topics seen last: the archive asks for each message's several times)."""
    parts = topic.split("/")
    if len(parts) < 5 or parts[0] != "casino" or parts[2] != "table":
        return None
    if not (_LEVEL.match(parts[1]) and _LEVEL.match(parts[3])):
        return None
    rel = "/".join(parts[4:])
    if not _REL.match(rel):
        return None
    return _table_ref(parts[1], parts[3]), rel


def topic_of_type(event_type: str) -> str | None:
    """The topic a replayed envelope was first published on, from its type (None: several possible)."""
    if event_type in EVENT_TYPES:
        return f"events/{event_type}"
    return {ALERT_TYPE: ALERTS_EVENTS, ALERTS_OPEN_TYPE: ALERTS_OPEN, CHECKPOINT_TYPE: CHECKPOINT_TOPIC}.get(
        event_type
    )


# A lone UTF-16 surrogate (a "\ud800" escape, or one encoded in the bytes): PostgreSQL's jsonb refuses it
_SURROGATE = re.compile("[\ud800-\udfff]")


def _storable(value: Any, depth: int = 0) -> bool:
    """What PostgreSQL's jsonb takes: no NUL character and no lone surrogate in any string or key, nesting at most
    ``MAX_DEPTH`` (numbers are finite already: ``_finite_float``). An envelope it would refuse is refused at the
    door: else its batch would fail on every retry and hold up the whole archive behind it."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, str):
        return "\x00" not in value and _SURROGATE.search(value) is None
    if isinstance(value, dict):
        return all(_storable(k, depth + 1) and _storable(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_storable(v, depth + 1) for v in value)
    return True


def _plainly_storable(payload: bytes) -> bool:
    """True when the JSON text alone shows ``_storable`` holds: no NUL byte, no ``\\u0000`` escape (the only way a
    JSON string carries a NUL), no ``\\ud``/``\\uD`` escape and no byte 0xED (the only ways to a surrogate: a pair
    of escapes is one character once parsed, and 0xED also leads U+D000-U+D7FF, which the walk then accepts) and at
    most ``MAX_DEPTH`` brackets (so no deeper nesting). False: walk it."""
    return (
        (
            b"\\u" not in payload
            or (b"\\u0000" not in payload and b"\\ud" not in payload and b"\\uD" not in payload)
        )
        and b"\x00" not in payload
        and b"\xed" not in payload
        and payload.count(b"{") + payload.count(b"[") <= MAX_DEPTH
    )


def _timestamp(ts: str) -> datetime:
    """A ``ts`` already matched by ``_TS`` (YYYY-MM-DDTHH:MM:SS.mmmZ), UTC; ValueError for a date that is not
    (``fromisoformat`` reads that form, ``Z`` included, since Python 3.11: in C, where the archive parses one a
    message)."""
    if ts[11:13] == "24":  # a Python that reads 24:00 as the next midnight: not a time a table writes
        raise ValueError("hour 24")
    when = datetime.fromisoformat(ts)
    return when if when.tzinfo is UTC else when.astimezone(UTC)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent, as ``float`` reads it; one beyond a double's range (``1e999``)
    would be infinity, which jsonb refuses: not taken."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


# made once (json.loads builds one a call)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def _loads(payload: bytes) -> Any:
    """What ``json.loads`` with ``parse_constant=_reject_constant`` returns for these bytes (UTF-8, -16 or -32 as
    the bytes say, surrogates passed), with the one decoder."""
    # an object's text starts with "{" and no NUL after it: UTF-8 (json.detect_encoding's answer, without its call)
    utf8 = payload[:1] == b"{" and payload[1:2] != b"\x00"
    return _DECODER.decode(
        payload.decode("utf-8" if utf8 else json.detect_encoding(payload), "surrogatepass")
    )


class _Fraction(Exception):
    """A number with a fraction or exponent in ``data``: not the table's form (``_table_form``)."""


def _no_fraction(text: str) -> float:
    raise _Fraction(text)


# the decoder's scanner itself, (value, where it ends) from a position (``decode`` wraps it in two whitespace
# matches and a frame: a third of a small document's time)
_TABLE_SCAN: Callable[[str, int], tuple[Any, int]] = vars(
    json.JSONDecoder(parse_constant=_reject_constant, parse_float=_no_fraction)
)["scan_once"]
_DATA_AT = len('{"chain":"') + 64 + len('","data":')  # where ``data`` starts in the table's form
# what follows ``data`` in the table's form: names and values that hold no escape, the number as JSON writes one
_TABLE_TAIL = re.compile(
    r',"event_id":(0|[1-9][0-9]{0,18}),"prev":"([0-9a-f]{64})","table":"([A-Za-z0-9_.-]{1,64})",'
    r'"ts":"([0-9T:.Z-]{1,32})","type":"([a-z_]{1,32})"\}\Z'
)


def _table_form(payload: bytes) -> tuple[dict[str, Any], str] | None:
    """An envelope in the form a table publishes it (canonical JSON: ``{"chain":"<64 hex>","data":{...},...}``,
    keys sorted, no spaces; controller/journal/event_chain.py) decoded once as ``_loads`` would decode it, with
    the JSON text of its ``data``: (the document, that text). None for any other form (a number with a fraction
    or exponent in it, spaces, another order, another key, an escape after ``data``, bad JSON): ``_loads`` then
    decodes it the general way. Whichever way, every check that follows is the same."""
    if not payload.startswith(b'{"chain":"'):
        return None
    try:
        text = payload.decode("utf-8", "surrogatepass")
        if text[_DATA_AT - 9 : _DATA_AT] != '","data":' or not HEX64.match(text[10 : _DATA_AT - 9]):
            return None
        data, end = _TABLE_SCAN(text, _DATA_AT)
    except (StopIteration, ValueError, RecursionError, _Fraction):
        return None
    tail = _TABLE_TAIL.match(text, end)
    if tail is None:
        return None
    event_id, prev, table, ts, etype = tail.groups()
    doc = {"chain": text[10 : _DATA_AT - 9], "data": data, "event_id": int(event_id), "prev": prev,
           "table": table, "ts": ts, "type": etype}  # fmt: skip
    return doc, text[_DATA_AT:end]


def parse_envelope(table: TableRef, topic: str | None, payload: bytes, source: str) -> Envelope | str:
    """An ``Envelope`` or the reason it is refused."""
    if len(payload) > MAX_PAYLOAD:
        return f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}"
    table_form = _table_form(payload)
    if table_form is not None:
        doc, data_text = table_form
    else:
        data_text = None
        try:
            doc = _loads(payload)
        except (ValueError, RecursionError, UnicodeDecodeError) as exc:
            return f"not JSON: {str(exc)[:80]}"
    if not isinstance(doc, dict):
        return "not a JSON object"
    event_id = doc.get("event_id")
    if not isinstance(event_id, int) or isinstance(event_id, bool) or not 1 <= event_id < 2**62:
        return "event_id is not a positive integer"
    etype, ts, tbl, data = doc.get("type"), doc.get("ts"), doc.get("table"), doc.get("data")
    if not isinstance(etype, str) or not _TYPE.match(etype):
        return "type is not a short lowercase name"
    if not isinstance(ts, str) or not _TS.match(ts):
        return "ts is not YYYY-MM-DDTHH:MM:SS.mmmZ"
    if tbl != table.table_id:
        return "envelope table differs from the topic's table"
    if not isinstance(data, dict):
        return "data is not an object"
    prev, chain = doc.get("prev"), doc.get("chain")
    if prev is None or chain is None:
        if prev is not chain:
            return "prev and chain are not both 64 lowercase hex"
    elif not (
        isinstance(prev, str) and isinstance(chain, str) and HEX64.fullmatch(prev) and HEX64.fullmatch(chain)
    ):
        return "prev and chain are not both 64 lowercase hex"
    if not (_plainly_storable(payload) or _storable(doc)):
        return "NUL character, lone surrogate or nesting too deep"
    try:
        when = _timestamp(ts)
    except ValueError:
        return "ts is not a valid date"
    return Envelope(table, topic, event_id, etype, when, data, bytes(payload), source, prev, chain, data_text)


def classify(topic: str, payload: bytes, replay_suffix: str) -> Message:
    """Turn one received MQTT message into what the archive stores.

    ``replay_suffix`` is ``cmd/replay/response/<our username>``: messages there are replayed envelopes or the
    closing document of a re-fetch (the event re-fetch, docs/reliability.md)."""
    split = split_topic(topic)
    if split is None:
        return Rejected(topic[:200], "not a table topic", len(payload))
    table, rel = split
    if rel == "status":
        text = payload.decode("utf-8", "replace")
        if text not in ("online", "offline"):
            return Rejected(topic, "status is neither online nor offline", len(payload))
        return Status(table, text)
    if rel.startswith(
        replay_suffix + "/"
    ):  # a re-fetched event, under the topic the table first published it on
        return _refetched(table, topic, rel[len(replay_suffix) + 1 :], payload)
    if rel == replay_suffix:
        if len(payload) > MAX_PAYLOAD:
            return Rejected(topic, "oversized replay message", len(payload))
        try:
            doc = _loads(payload)
        except (ValueError, RecursionError, UnicodeDecodeError):
            return Rejected(topic, "replay message is not JSON", len(payload))
        if isinstance(doc, dict) and "request_id" in doc:
            return ReplayClose(table, doc)
        # an older table answers every event on the response topic itself: its topic from its type if it can
        etype = doc.get("type") if isinstance(doc, dict) else None
        parsed = parse_envelope(
            table, topic_of_type(etype) if isinstance(etype, str) else None, payload, "replay"
        )
        return parsed if isinstance(parsed, Envelope) else Rejected(topic, parsed, len(payload))
    if rel.startswith("cmd/"):
        return Ignored(topic)
    parsed = parse_envelope(table, rel, payload, "live")
    return parsed if isinstance(parsed, Envelope) else Rejected(topic, parsed, len(payload))


def _refetched(table: TableRef, topic: str, original: str, payload: bytes) -> Envelope | Rejected:
    """An event sent again by the table's re-fetch under ``<response>/<original topic>``: filed under that topic
    (the journal's) as a live arrival would be, once the topic is one an envelope is published on and agrees with
    the envelope's type."""
    if not _REPORTED.match(original):
        return Rejected(
            topic, f"re-fetched event under {original[:80]!r}, not a topic the table reports on", len(payload)
        )
    parsed = parse_envelope(table, original, payload, "replay")
    if not isinstance(parsed, Envelope):
        return Rejected(topic, parsed, len(payload))
    implied = topic_of_type(parsed.type)
    if implied is None and not (parsed.type == STATE_TYPE and original.startswith("state/")):
        return Rejected(topic, f"re-fetched {parsed.type!r} event under {original!r}", len(payload))
    if implied is not None and implied != original:
        return Rejected(topic, f"re-fetched {parsed.type!r} event under {original!r}", len(payload))
    return parsed
