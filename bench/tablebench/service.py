"""The bench's launcher of the table service: ``python -m tablebench.service --config FILE [--gpio-control
SOCKET] [the options of tablectl run]``.

The very service `tablectl run` runs (controller/service/), plus, with ``--gpio-control``, the unix socket
through which the bench, the demo and the tests drive its fake GPIO board (tablebench/gpio_server.py:
buttons, chip slots, the lid lock's read-back). The socket listens before the service starts and is closed
after it stopped; it needs ``[gpio] backend = "fake"`` (exit 2 otherwise). Development tooling only: the
product's `tablectl run` has no such option (issue 16)."""

from __future__ import annotations

import argparse
import sys

from controller.cli import run
from controller.config.model import TableConfig
from controller.gpio.base import GpioBackend
from controller.service.errors import OptionsError
from controller.service.table_service import TableService
from tablebench.gpio_server import FAKE_BACKEND, FakeBoardServer


class BenchService(TableService):
    """The table service with its fake GPIO board reachable through a control socket."""

    def __init__(self, config: TableConfig, gpio_control: str) -> None:
        if config.gpio.backend is not GpioBackend.FAKE:
            raise OptionsError(f"tablebench.service: --gpio-control needs {FAKE_BACKEND}")
        super().__init__(config)
        self.gpio_server = FakeBoardServer(lambda: self.board, gpio_control)

    async def start(self) -> None:
        await self.gpio_server.start()
        await super().start()

    async def stop(self) -> None:
        try:
            await super().stop()
        finally:
            await self.gpio_server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tablebench.service", description=__doc__.splitlines()[0])
    run.add_arguments(parser)
    parser.add_argument("--gpio-control", help="unix socket to drive the fake GPIO board")
    args = parser.parse_args(argv)
    if not args.gpio_control:
        return run.main(args)
    return run.main(args, build=lambda config: BenchService(config, args.gpio_control))


if __name__ == "__main__":
    sys.exit(main())
