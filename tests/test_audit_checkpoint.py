"""Signed audit checkpoints (issue 13 §1): the chain head signed with the table's Ed25519 key."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import (
    GENESIS,
    CheckpointError,
    follows,
    public_key_hex,
    sign_checkpoint,
    verify_checkpoint,
)


def _cp(key: Ed25519PrivateKey, seq: int = 10, prev_seq: int = 0, prev_hash: str = GENESIS):
    return sign_checkpoint(
        key,
        site="S1",
        table="T1",
        seq=seq,
        hash="ab" * 32,
        last_event_id=7,
        prev_seq=prev_seq,
        prev_hash=prev_hash,
        ts="2026-11-23T12:00:00.000Z",
    )


def test_a_checkpoint_verifies_against_the_tables_key() -> None:
    key = Ed25519PrivateKey.generate()
    cp = _cp(key)
    assert verify_checkpoint(cp.to_dict(), public_key_hex(key.public_key())) == cp


@pytest.mark.parametrize(("field", "value"), [("seq", 11), ("hash", "cd" * 32), ("table", "T2")])
def test_an_altered_checkpoint_is_refused(field: str, value: object) -> None:
    key = Ed25519PrivateKey.generate()
    data = {**_cp(key).to_dict(), field: value}
    with pytest.raises(CheckpointError, match="bad signature"):
        verify_checkpoint(data, public_key_hex(key.public_key()))


def test_a_checkpoint_re_signed_with_another_key_is_refused() -> None:
    table_key, attacker = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    forged = _cp(attacker).to_dict()
    verify_checkpoint(forged, None)  # it is self-consistent ...
    with pytest.raises(CheckpointError, match="not by the table's key"):
        verify_checkpoint(forged, public_key_hex(table_key.public_key()))  # ... but not the table's


def test_malformed_checkpoints_name_the_field() -> None:
    key = Ed25519PrivateKey.generate()
    good = _cp(key).to_dict()
    with pytest.raises(CheckpointError, match="seq must be"):
        verify_checkpoint({**good, "seq": "10"}, None)
    with pytest.raises(CheckpointError, match="unexpected fields"):
        verify_checkpoint({**good, "extra": 1}, None)
    with pytest.raises(CheckpointError, match="expected a JSON object"):
        verify_checkpoint([good], None)


def test_checkpoints_chain_to_the_one_before() -> None:
    key = Ed25519PrivateKey.generate()
    first = _cp(key, seq=10)
    second = _cp(key, seq=20, prev_seq=first.seq, prev_hash=first.hash)
    assert follows(second, first)
    assert not follows(_cp(key, seq=20, prev_seq=9, prev_hash=first.hash), first)
