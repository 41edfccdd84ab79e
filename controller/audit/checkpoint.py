"""Signed audit checkpoints: the journal's chain head, signed with the table's Ed25519 key.

A checkpoint says "as of record ``seq`` the chain head was ``hash``", signed by the table. Published retained on
``<prefix>/audit/checkpoint`` (through the outbox, so it carries an ``event_id`` like every event) and kept by
the floor, it anchors the journal off the table: truncating, rewriting or re-signing the records up to it shows
up in ``tablectl journal verify --checkpoint FILE``. Each checkpoint also names the one before it
(``prev_seq``/``prev_hash``), so a consumer that keeps them all can check that they form one continuous chain.

The payload (the envelope's ``data``)::

    {"format": "tablectl-checkpoint/1", "site": "S1", "table": "T1",
     "seq": 1234, "hash": "<64 hex: the hash of record seq>", "last_event_id": 987,
     "prev_seq": 1200, "prev_hash": "<64 hex, or 64 zeros before the first checkpoint>",
     "ts": "2026-11-23T12:00:00.000Z", "key_id": "<16 hex>", "public_key": "<64 hex, raw Ed25519>",
     "event_chain": "<64 hex: the published events' chain value at last_event_id>",
     "sig": "<128 hex: Ed25519 over canonical(payload without sig)>"}

``event_chain`` (added by issue 25; absent from checkpoints of older tables, which then prove no event) signs the
head of the published events' hash chain (controller/journal/event_chain.py): with it the floor proves that
every archived event up to ``last_event_id`` is the table's.

``key_id`` is the first 16 hex digits of SHA-256 over the raw public key; the integrity manifest records the
table's public key, and a verifier must compare against that trusted key (a checkpoint verified only against its
own ``public_key`` proves nothing: anyone can make a key).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from controller.canonical import canonical
from controller.hex64 import HEX64

FORMAT = "tablectl-checkpoint/1"
GENESIS = "0" * 64
_HEX16 = re.compile(r"^[0-9a-f]{16}\Z")
_HEX128 = re.compile(r"^[0-9a-f]{128}\Z")
_INT_FIELDS = ("seq", "last_event_id", "prev_seq")
_FIELDS = frozenset(
    {"format", "site", "table", "seq", "hash", "last_event_id", "prev_seq", "prev_hash", "ts", "key_id"}
    | {"public_key", "sig"}
)
_OPTIONAL = frozenset({"event_chain"})


class CheckpointError(ValueError):
    """A checkpoint that is malformed, signed by another key or not signed correctly; says which."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    site: str
    table: str
    seq: int
    hash: str
    last_event_id: int
    prev_seq: int
    prev_hash: str
    ts: str
    key_id: str
    public_key: str
    sig: str
    event_chain: str | None = None  # the published events' chain value at last_event_id

    def to_dict(self) -> dict[str, Any]:
        optional = {} if self.event_chain is None else {"event_chain": self.event_chain}
        return optional | {
            "format": FORMAT,
            "site": self.site,
            "table": self.table,
            "seq": self.seq,
            "hash": self.hash,
            "last_event_id": self.last_event_id,
            "prev_seq": self.prev_seq,
            "prev_hash": self.prev_hash,
            "ts": self.ts,
            "key_id": self.key_id,
            "public_key": self.public_key,
            "sig": self.sig,
        }


def public_key_hex(key: Ed25519PublicKey) -> str:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def key_id(public_key_hex_: str) -> str:
    return hashlib.sha256(bytes.fromhex(public_key_hex_)).hexdigest()[:16]


def signed_text(data: dict[str, Any]) -> bytes:
    """The bytes the signature covers: the canonical JSON of every field but ``sig``."""
    return canonical({k: v for k, v in data.items() if k != "sig"}).encode("utf-8")


def sign_checkpoint(
    private_key: Ed25519PrivateKey,
    *,
    site: str,
    table: str,
    seq: int,
    hash: str,
    last_event_id: int,
    prev_seq: int,
    prev_hash: str,
    ts: str,
    event_chain: str | None = None,
) -> Checkpoint:
    pub = public_key_hex(private_key.public_key())
    unsigned = Checkpoint(
        site, table, seq, hash, last_event_id, prev_seq, prev_hash, ts, key_id(pub), pub, "", event_chain
    )
    sig = private_key.sign(signed_text(unsigned.to_dict())).hex()
    return Checkpoint(**{**_fields(unsigned), "sig": sig})


def _fields(cp: Checkpoint) -> dict[str, Any]:
    return {name: getattr(cp, name) for name in Checkpoint.__slots__}


def parse_checkpoint(data: Any) -> Checkpoint:
    """Shape only (no signature check): a ``Checkpoint`` or ``CheckpointError`` naming the bad field."""
    if not isinstance(data, dict):
        raise CheckpointError("checkpoint: expected a JSON object")
    if data.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint: format is not {FORMAT!r}")
    extra = sorted(set(data) - _FIELDS - _OPTIONAL)
    missing = sorted(_FIELDS - set(data))
    if extra or missing:
        raise CheckpointError(f"checkpoint: unexpected fields {extra}, missing fields {missing}")
    for name in _INT_FIELDS:
        value = data[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CheckpointError(f"checkpoint: {name} must be a non-negative integer")
    for name, pattern in (
        ("hash", HEX64),
        ("prev_hash", HEX64),
        ("public_key", HEX64),
        ("key_id", _HEX16),
        ("sig", _HEX128),
        *((("event_chain", HEX64),) if "event_chain" in data else ()),
    ):
        if not isinstance(data[name], str) or not pattern.match(data[name]):
            raise CheckpointError(f"checkpoint: {name} is not lowercase hex of the right length")
    for name in ("site", "table", "ts"):
        if not isinstance(data[name], str) or not 0 < len(data[name]) <= 64:
            raise CheckpointError(f"checkpoint: {name} must be a string of 1-64 characters")
    if data["prev_seq"] >= data["seq"] and data["seq"] != 0:
        raise CheckpointError("checkpoint: prev_seq must be below seq")
    return Checkpoint(**{k: data[k] for k in Checkpoint.__slots__ if k in data})


def verify_checkpoint(data: Any, trusted_public_key: str | None) -> Checkpoint:
    """Parse and check the signature against the table's trusted public key (hex, raw Ed25519).

    ``trusted_public_key=None`` checks only that the checkpoint is signed by the key it names: use it to read a
    checkpoint, never to trust one. Raises ``CheckpointError``."""
    cp = parse_checkpoint(data)
    if key_id(cp.public_key) != cp.key_id:
        raise CheckpointError("checkpoint: key_id does not match public_key")
    if trusted_public_key is not None and cp.public_key != trusted_public_key.lower():
        raise CheckpointError(
            f"checkpoint: signed by key {cp.key_id}, not by the table's key {key_id(trusted_public_key)}"
        )
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(cp.public_key)).verify(
            bytes.fromhex(cp.sig), signed_text(data)
        )
    except (InvalidSignature, ValueError):
        raise CheckpointError("checkpoint: bad signature (altered, or not signed by this key)") from None
    return cp


def follows(newer: Checkpoint, older: Checkpoint) -> bool:
    """``newer`` names ``older`` as the checkpoint before it (one continuous chain of checkpoints)."""
    return newer.prev_seq == older.seq and newer.prev_hash == older.hash and newer.seq >= older.seq
