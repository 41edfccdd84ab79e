"""A linked progressive's meter document, as the link's controller on the floor publishes it (retained, QoS 1, on
``casino/{site}/progressive/{link}/meter``; the table's bridge carries it to ``<prefix>/progressive/meter``), and
its check: size, JSON shape, bounds, the link's name, the Ed25519 signature with the link's key and a sequence
number above the last one accepted. Pure: bytes in, a ``LinkDocument`` or a ``LinkDocRefused`` naming why.

Anyone who can publish on the table's broker may try a forgery; only a document that passes every check here is
ever shown or acted on (docs/jackpot.md "Linked progressive (table side)").

    {"link", "seq", "ts", "status": "running"|"suspended", "meter_units", "meter_minor", "reserve_units",
     "overflow_units", "base_minor", "limit_minor", "currency", "bet_value", "members": [table ids],
     "pending": [{"hit_id", "table", "round_id", "seat", "combination", "amount_minor", "order"}], "sig"}

``sig``: hex Ed25519 signature over ``json.dumps(doc_without_sig, sort_keys=True, separators=(",", ":"))``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.jackpot.config import CURRENCY_CODE, LINK_NAME, METER_MAX
from controller.jackpot.hits import Combination
from controller.jackpot.meter import UNIT

MAX_BYTES = 64 * 1024  # a document larger than this is refused unread
MAX_MEMBERS = 500  # tables on one link
MAX_PENDING = 64  # hits awaiting payment on one link
MAX_SEQ = 2**53 - 1  # exact in every JSON reader
MAX_UNITS = (METER_MAX + 1) * UNIT - 1
_TABLE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")
_ROUND_ID = re.compile(r"^[\x21-\x7e]{1,64}\Z")
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})\Z")
_SIG = re.compile(r"^[0-9a-f]{128}\Z")


class LinkStatus(StrEnum):
    RUNNING = "running"
    SUSPENDED = "suspended"  # parameters being changed, or stopped by the floor: linked chips refused


class Refusal(StrEnum):
    """Why a meter document was refused (counted per reason by the service, logged)."""

    TOO_LARGE = "too_large"
    NOT_JSON = "not_json"
    SHAPE = "shape"  # a field missing, of the wrong type, out of bounds or unknown
    WRONG_LINK = "wrong_link"
    BAD_SIGNATURE = "bad_signature"
    REPLAYED = "replayed"  # seq not above the last accepted one
    STALE = "stale"  # older than the table's link_timeout_s (the service checks it: it has the clock)


class LinkDocRefused(ValueError):
    def __init__(self, reason: Refusal, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail

    @classmethod
    def stale(cls, detail: str) -> LinkDocRefused:
        return cls(Refusal.STALE, detail)


@dataclass(frozen=True, slots=True)
class LinkHit:
    """A hit the link's controller ordered and froze: ``amount_minor`` is the prize (minor units)."""

    hit_id: int
    table: str
    round_id: str
    seat: int
    combination: str
    amount_minor: int
    order: int


@dataclass(frozen=True, slots=True)
class LinkDocument:
    link: str
    seq: int
    ts: str
    status: LinkStatus
    meter_minor: int
    currency: str
    bet_value: int
    members: tuple[str, ...]
    pending: tuple[LinkHit, ...]

    @property
    def running(self) -> bool:
        return self.status is LinkStatus.RUNNING

    def hits_for(self, table: str) -> tuple[LinkHit, ...]:
        return tuple(h for h in self.pending if h.table == table)


_FIELDS = {
    "link", "seq", "ts", "status", "meter_units", "meter_minor", "reserve_units", "overflow_units",
    "base_minor", "limit_minor", "currency", "bet_value", "members", "pending", "sig",
}  # fmt: skip
_HIT_FIELDS = {"hit_id", "table", "round_id", "seat", "combination", "amount_minor", "order"}


def signed_bytes(doc: dict[str, Any]) -> bytes:
    """What the signature covers: the document without ``sig``, keys sorted, no spaces."""
    body = {k: v for k, v in doc.items() if k != "sig"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def verify(raw: bytes, *, link: str, public_key: bytes, last_seq: int | None) -> LinkDocument:
    """The document in ``raw`` if it is the link's, signed with its key, well formed and newer than
    ``last_seq``; else ``LinkDocRefused``. The signature is checked before anything in it is believed."""
    if len(raw) > MAX_BYTES:
        raise LinkDocRefused(Refusal.TOO_LARGE, f"{len(raw)} bytes (at most {MAX_BYTES})")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise LinkDocRefused(Refusal.NOT_JSON, "not a JSON document") from None
    if not isinstance(doc, dict):
        raise LinkDocRefused(Refusal.SHAPE, "not a JSON object")
    unknown, missing = sorted(set(doc) - _FIELDS), sorted(_FIELDS - set(doc))
    if unknown or missing:
        raise LinkDocRefused(Refusal.SHAPE, f"unknown fields {unknown[:5]}, missing {missing[:5]}")
    sig = doc["sig"]
    if not isinstance(sig, str) or not _SIG.fullmatch(sig):
        raise LinkDocRefused(Refusal.BAD_SIGNATURE, "sig is not 128 hex digits")
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(bytes.fromhex(sig), signed_bytes(doc))
    except (InvalidSignature, ValueError):
        raise LinkDocRefused(Refusal.BAD_SIGNATURE, "not signed with the link's key") from None
    if doc["link"] != link:
        raise LinkDocRefused(
            Refusal.WRONG_LINK, f"for link {str(doc['link'])[:40]!r}, this table is on {link!r}"
        )
    parsed = _parse(doc)
    if last_seq is not None and parsed.seq <= last_seq:
        raise LinkDocRefused(Refusal.REPLAYED, f"seq {parsed.seq} is not above {last_seq}")
    return parsed


def _int(doc: dict[str, Any], key: str, maximum: int, minimum: int = 0) -> int:
    v = doc.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        raise LinkDocRefused(Refusal.SHAPE, f"{key}: expected an integer {minimum}..{maximum}")
    return v


def _str(doc: dict[str, Any], key: str, pattern: re.Pattern[str]) -> str:
    v = doc.get(key)
    if not isinstance(v, str) or not pattern.fullmatch(v):
        raise LinkDocRefused(Refusal.SHAPE, f"{key}: not a valid value")
    return v


def _parse(doc: dict[str, Any]) -> LinkDocument:
    link = _str(doc, "link", LINK_NAME)
    seq = _int(doc, "seq", MAX_SEQ)
    ts = _str(doc, "ts", _TS)
    try:
        status = LinkStatus(doc["status"])
    except ValueError:
        raise LinkDocRefused(Refusal.SHAPE, "status: expected running or suspended") from None
    for key in ("meter_units", "reserve_units", "overflow_units"):
        _int(doc, key, MAX_UNITS)
    meter_minor = _int(doc, "meter_minor", METER_MAX)
    if abs(meter_minor * UNIT - doc["meter_units"]) >= UNIT:  # whole minor units of meter_units
        raise LinkDocRefused(Refusal.SHAPE, "meter_minor does not agree with meter_units")
    for key in ("base_minor", "limit_minor"):
        _int(doc, key, METER_MAX)
    currency = _str(doc, "currency", CURRENCY_CODE)
    bet_value = _int(doc, "bet_value", METER_MAX, minimum=1)
    members = doc["members"]
    if not isinstance(members, list) or len(members) > MAX_MEMBERS:
        raise LinkDocRefused(Refusal.SHAPE, f"members: expected a list of at most {MAX_MEMBERS}")
    for m in members:
        if not isinstance(m, str) or not _TABLE_ID.fullmatch(m):
            raise LinkDocRefused(Refusal.SHAPE, "members: not a table id")
    pending = doc["pending"]
    if not isinstance(pending, list) or len(pending) > MAX_PENDING:
        raise LinkDocRefused(Refusal.SHAPE, f"pending: expected a list of at most {MAX_PENDING}")
    hits = tuple(_hit(h) for h in pending)
    if len({h.hit_id for h in hits}) != len(hits):
        raise LinkDocRefused(Refusal.SHAPE, "pending: a hit_id twice")
    return LinkDocument(link, seq, ts, status, meter_minor, currency, bet_value, tuple(members), hits)


def _hit(h: Any) -> LinkHit:
    if not isinstance(h, dict) or set(h) != _HIT_FIELDS:
        raise LinkDocRefused(Refusal.SHAPE, f"pending: each hit has exactly {sorted(_HIT_FIELDS)}")
    combination = h["combination"]
    if combination not in Combination.__members__:
        raise LinkDocRefused(Refusal.SHAPE, "pending: unknown combination")
    return LinkHit(
        hit_id=_int(h, "hit_id", MAX_SEQ, minimum=1),
        table=_str(h, "table", _TABLE_ID),
        round_id=_str(h, "round_id", _ROUND_ID),
        seat=_int(h, "seat", 99, minimum=1),
        combination=str(combination),
        amount_minor=_int(h, "amount_minor", METER_MAX),
        order=_int(h, "order", MAX_SEQ),
    )
