"""The tests' stand-in for a linked progressive's controller: its Ed25519 key and the signed meter documents of
the contract (controller/jackpot/link_doc.py). NOT the floor's link controller: a document maker only."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from controller.jackpot.link_doc import signed_bytes

LINK = "bank-a"
UNIT = 10_000


class LinkSigner:
    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()
        self.public = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public_hex = self.public.hex()

    def sign(self, doc: dict[str, Any]) -> bytes:
        body = {k: v for k, v in doc.items() if k != "sig"}
        return json.dumps({**body, "sig": self.key.sign(signed_bytes(body)).hex()}).encode()

    @staticmethod
    def hit(hit_id: int, table: str, round_id: str, seat: int, combination: str = "TWO_ACES_MIXED",
            amount_minor: int = 2500, order: int = 1) -> dict[str, Any]:  # fmt: skip
        return {"hit_id": hit_id, "table": table, "round_id": round_id, "seat": seat,
                "combination": combination, "amount_minor": amount_minor, "order": order}  # fmt: skip


def meter_doc(seq: int, meter_units: int = 1_000_000 * UNIT, **over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "link": LINK,
        "seq": seq,
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "status": "running",
        "meter_units": meter_units,
        "meter_minor": meter_units // UNIT if meter_units >= 0 else 0,
        "reserve_units": 0,
        "overflow_units": 0,
        "base_minor": 1_000_000,
        "limit_minor": 5_000_000,
        "currency": "EUR",
        "bet_value": 100,
        "members": ["T1", "T2"],
        "pending": [],
    }
    doc.update(over)
    return doc
