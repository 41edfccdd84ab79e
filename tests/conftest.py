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

# The longest modules first (from `--durations` of a whole run on an idle 2-core machine, longest first; the
# Debian boots lead, as they also build their cached root filesystems on a fresh machine). scripts/test runs
# `--dist loadfile`: a module is one unit of work, handed to whichever worker is free, so starting the long ones
# first lets both workers end together instead of leaving one on a long module at the end. A module missing here
# only starts later; the order changes nothing else.
LONGEST_FIRST = (
    "tests/test_floor_installer_debian.py",
    "tests/test_setup_env_debian.py",
    "tests/test_installer_debian.py",
    "hil_tests/test_floor_netns.py",
    "tests/test_floor_demo.py",
    "tests/test_link_noise.py",
    "tests/test_core_equivalence.py",
    "tests/test_benchmarks_smoke.py",
    "hil_tests/test_sessions.py",
    "tests/test_floor_web.py",
    "hil_tests/test_soak.py",
    "tests/test_terminal_next.py",
    "tests/test_floor_repair.py",
    "hil_tests/test_floor_bridge_outage.py",
    "hil_tests/test_faults.py",
    "tests/test_demo.py",
    "tests/test_shoe_math.py",
    "tests/test_floor_web_auth.py",
    "tests/test_wheel_install.py",
    "hil_tests/test_floor_standby_netns.py",
    "tests/test_terminal.py",
    "tests/test_terminal_script.py",
    "hil_tests/test_progressive_link_netns.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every collected test (tests/ and hil_tests/), the modules of LONGEST_FIRST first; the rest keep their
    order (a stable sort)."""
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


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
