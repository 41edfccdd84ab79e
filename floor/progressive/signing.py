"""The link's meter document (docs/progressive.md "The meter topic"), signed with the link's Ed25519 key.

Published retained, QoS 1, on ``casino/{site}/progressive/{link}/meter``. The signature covers the canonical
JSON of every field but ``sig`` (controller/audit/checkpoint.py ``signed_text``: sorted keys, no spaces; every
string of the document is ASCII, checked where it enters, so the bytes are those of ``json.dumps(doc,
sort_keys=True, separators=(",", ":"))`` too), ``sig`` its hex. A table trusts the link's public key from its
own configuration, never from the document."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from controller.audit.checkpoint import signed_text
from controller.jackpot.meter import UNIT
from floor.progressive.ledger import Hit, Link

METER_TOPIC = "casino/{site}/progressive/{link}/meter"


def topic(site: str, link: str) -> str:
    return METER_TOPIC.format(site=site, link=link)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def document(link: Link, pending: list[Hit], seq: int, ts: str) -> dict[str, Any]:
    p, m = link.params, link.meter
    return {
        "link": link.link,
        "seq": seq,
        "ts": ts,
        "status": link.status.value,
        "meter_units": m.meter_units,
        "meter_minor": m.meter_units // UNIT,
        "reserve_units": m.reserve_units,
        "overflow_units": m.overflow_units,
        "base_minor": p.base_minor,
        "limit_minor": p.limit_minor,
        "currency": p.currency,
        "bet_value": p.bet_value,
        "members": list(p.members),
        "pending": [
            {
                "hit_id": h.hit_id,
                "table": h.table_id,
                "round_id": h.round_id,
                "seat": h.seat,
                "combination": h.combination,
                "amount_minor": h.amount_minor,
                "order": h.order,
            }
            for h in pending
        ],
    }


def sign(doc: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    return doc | {"sig": key.sign(signed_text(doc)).hex()}


def verify(doc: Any, public_key_hex: str) -> bool:
    """True when ``doc`` is signed by the link's key (raw Ed25519, hex)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("sig"), str):
        return False
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex)).verify(
            bytes.fromhex(doc["sig"]), signed_text(doc)
        )
    except (InvalidSignature, ValueError):
        return False
    return True
