"""Schemas of every MQTT payload (draft 2020-12), the docs' topic table, and the no-shoe-secrets rule."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from controller.mqtt.schemas import MessageInvalid, schema_files, validate_message
from controller.topics import SPECS, Topics, event_topic, spec_for, state_topic

DOC = (Path(__file__).resolve().parents[1] / "docs" / "mqtt.md").read_text()


def env(type_: str, data: dict, **kw) -> bytes:
    return json.dumps(
        {"event_id": 7, "ts": "2026-01-01T00:00:00.000Z", "type": type_, "table": "T1", "data": data, **kw}
    ).encode()


CARD = {
    "code": "AS",
    "rank": "A",
    "suit": "S",
    "shoe_seq": 12,
    "face_up": True,
    "recipient": "seat:3:1",
    "counts": True,
}


def test_every_schema_is_valid_draft_2020_12_and_every_topic_has_one() -> None:
    files = schema_files()
    for name, schema in files.items():
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"].endswith("2020-12/schema"), name
    assert {s.schema for s in SPECS} <= set(files)


def test_docs_list_every_topic_with_its_schema_retain_and_qos() -> None:
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", DOC, re.M)}
    for spec in SPECS:
        row = rows.get(spec.pattern)
        assert row, f"docs/mqtt.md lacks topic {spec.pattern}"
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == ("yes" if spec.retained else "no") and cells[3] == str(spec.qos), row
        assert spec.schema in cells[4], row


def test_docs_worked_signing_example_is_exact() -> None:
    """docs/mqtt.md's worked example: the example key file opened with its PIN gives the documented public key,
    canonical text and (Ed25519 being deterministic) signature."""
    from controller.mqtt.auth import canonical, sign
    from controller.mqtt.userkeys import load_key_file, public_key_hex

    cmd = {
        "user": "alice",
        "role": "supervisor",
        "action": "clear_jam",
        "args": {"alert_id": 3},
        "site": "S1",
        "table": "T1",
        "ts": 1767225600,
        "nonce": "00112233445566778899aabbccddeeff",
    }
    key = load_key_file(
        Path(__file__).resolve().parents[1] / "docs/examples/keys/alice.key", "alice", "123456"
    )
    assert f"public key = {public_key_hex(key)}" in DOC
    assert f"canonical  = {canonical(cmd).decode()}" in DOC
    assert f'"sig":"{sign(cmd, key)}"' in DOC


def test_valid_messages_pass() -> None:
    validate_message(event_topic("card"), env("card", CARD))
    validate_message(state_topic("lid"), env("state", {"state": "locked"}))
    validate_message(
        "events/settlement",
        env(
            "settlement",
            {
                "round_id": 4,
                "hands": [
                    {"seat": 1, "hand": 1, "bet": 1000, "result": "blackjack", "payout": 2500, "net": 1500}
                ],
            },
        ),
    )
    validate_message("status", b"offline")
    validate_message("cmd/supervisor/response/console-9", b'{"request_id":"a","ok":false,"reason":"stale"}')


@pytest.mark.parametrize(
    ("topic", "payload", "why"),
    [
        ("events/card", env("card", {**CARD, "code": "1S"}), "$.data.code"),
        ("events/card", env("card", {**CARD, "next_card": "KH"}), "next_card"),
        (
            "events/shoe",
            env("shoe", {"procedure": "shuffle_end", "shuffle_result": ["AS"]}),
            "shuffle_result",
        ),
        (
            "events/round",
            env("round", {"round_id": 1, "phase": "dealing", "x": {"upcoming": []}}),
            "upcoming",
        ),
        ("events/card", env("card", CARD, extra=1), "extra"),
        ("events/card", env("lid", {"state": "open"}), "$.type"),
        ("events/settlement", env("settlement", {"round_id": 1, "total_bet": 10.5}), "total_bet"),
        ("status", b"maybe", "status"),
        ("events/card", b"\x00\xff", "UTF-8"),
        ("events/card", b'{"event_id": NaN}', "JSON"),
        ("nope/topic", b"{}", "not a topic"),
    ],
)
def test_invalid_messages_rejected_with_a_reason(topic: str, payload: bytes, why: str) -> None:
    with pytest.raises(MessageInvalid, match=re.escape(why)):
        validate_message(topic, payload)


@given(
    st.binary(max_size=300),
    st.sampled_from([s.pattern.replace("+", "dealer").replace("#", "x") for s in SPECS]),
)
def test_validate_message_never_crashes(payload: bytes, topic: str) -> None:
    assert spec_for(topic) is not None
    with contextlib.suppress(MessageInvalid):
        validate_message(topic, payload)


def test_topics_prefix_and_bad_segments() -> None:
    t = Topics("lisbon", "T1")
    assert t.abs("status") == "casino/lisbon/table/T1/status" and t.rel(t.abs("events/card")) == "events/card"
    assert t.rel("casino/lisbon/table/T2/status") is None
    for bad in ("a/b", "a+", "#", ""):
        with pytest.raises(ValueError):
            Topics("s", bad)
    with pytest.raises(ValueError):
        event_topic("upcoming")
