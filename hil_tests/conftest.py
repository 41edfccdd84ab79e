"""The HIL bench's pytest wiring: `--bench FILE` chooses the hardware, `rig` starts a table on it.

    pytest hil_tests                       # the emulated bench (hil_tests/benches/emulated.toml), CI default
    pytest hil_tests -m hil --bench my-pi.toml   # the same scenarios against a real table
A scenario that scripts the shoe or the GPIO board raises NeedsEmulator on a real bench and is reported as
skipped with the reason (it never passes silently).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tablebench.bench.config import BenchConfig, load_bench
from tablebench.bench.driver import Dealer
from tablebench.bench.rig import NeedsEmulator, Rig
from tests.support.rig import no_invalid_messages


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--bench",
        default=None,
        help="bench description (TOML) for hil_tests; default hil_tests/benches/emulated.toml",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(NeedsEmulator):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")


@pytest.fixture(scope="session")
def bench(pytestconfig: pytest.Config) -> BenchConfig:
    return load_bench(pytestconfig.getoption("--bench"))


RigFactory = Callable[..., contextlib.AbstractAsyncContextManager[tuple[Rig, Dealer]]]


@pytest.fixture
def table(bench: BenchConfig, tmp_path: Path) -> RigFactory:
    """``async with table(scenario=..., profile=...) as (rig, dealer):`` one table, stopped afterwards; on a
    failure the controller's log tail is attached to the error."""

    @contextlib.asynccontextmanager
    async def make(
        scenario: dict[str, Any] | None = None, profile: str | None = None, seed: int = 0
    ) -> AsyncIterator[tuple[Rig, Dealer]]:
        if scenario is not None and not bench.emulated_shoe:
            raise NeedsEmulator(f"scenario {scenario} needs the emulated shoe")
        rig = Rig(bench, tmp_path / "rig", scenario=scenario, profile=profile)
        await rig.start()
        try:
            yield rig, Dealer(rig, seed=seed)
            no_invalid_messages(rig)  # every message any of its clients saw
        finally:
            await rig.stop()

    return make
