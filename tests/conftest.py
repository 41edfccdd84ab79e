"""Shared fixtures. Broker fixtures: a real mosquitto per test, built from firmware_configs/mosquitto/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.broker import USERS

from tablebench.broker import Broker


@pytest.fixture
def mqtt_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A fresh mosquitto on a free port with the shipped config, ACL and demo accounts."""
    broker = Broker.start(tmp_path_factory.mktemp("broker"), users=USERS)
    try:
        yield broker
    finally:
        broker.stop()
