"""Shared fixtures. Broker fixtures: a real mosquitto per test, built from firmware_configs/mosquitto/. Floor
fixtures: a throw-away PostgreSQL database (on the test process's own server unless FLOOR_TEST_DSN names one:
tablebench/postgres.py) and a floor broker with the floor's demo accounts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.broker import USERS
from support.floor import FLOOR_USERS, temp_database

from controller.broker import BrokerKind
from tablebench.broker import Broker


@pytest.fixture
def mqtt_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A fresh mosquitto on a free port with the shipped config, ACL and demo accounts."""
    broker = Broker.start(tmp_path_factory.mktemp("broker"), users=USERS)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def dsn() -> Iterator[str]:
    """A new, empty floor database, dropped afterwards."""
    with temp_database() as d:
        yield d


@pytest.fixture
def floor_broker(tmp_path: Path) -> Iterator[Broker]:
    """A floor broker (mosquitto, shipped settings and floor ACL) with the accounts of tests/support/floor.py."""
    broker = Broker.start(tmp_path / "floor-broker", users=FLOOR_USERS, acl=BrokerKind.FLOOR)
    try:
        yield broker
    finally:
        broker.stop()
