"""Shared by the jackpot tests: the table's jackpot configuration, and a fixture checking that every jackpot
document and event the tests' Harnesses produced is valid against its (strict) schema (import
``jackpot_messages_valid`` and mark the module ``pytest.mark.usefixtures("jackpot_messages_valid")``)."""

from __future__ import annotations

import json

import pytest

from controller.mqtt.schemas import validate_message
from controller.table.messages import messages
from tablebench.table_testing import Harness

TOPICS = ("events/jackpot", "state/jackpot", "state/round")
BET = 100
SEED = 1_000_000
CFG = {
    "enabled": True,
    "mode": "automatic",
    "bet_value": BET,
    "increment_bp": 7000,
    "reserve_bp": 1000,
    "seed": SEED,
    "currency": "EUR",
}


@pytest.fixture
def jackpot_messages_valid(monkeypatch: pytest.MonkeyPatch):
    harnesses: list[Harness] = []
    real_init = Harness.__init__

    def init(self: Harness) -> None:
        real_init(self)
        harnesses.append(self)

    monkeypatch.setattr(Harness, "__init__", init)
    yield
    for h in harnesses:
        for i, e in enumerate(messages(h.effects)):
            if e.topic in TOPICS:
                payload = {"event_id": i + 1, "ts": "2026-01-01T00:00:00.000Z", "type": e.event_type}
                payload.update(table="T1", data=e.data)
                validate_message(e.topic, json.dumps(payload).encode())
