"""Development tooling of the table controller, apart from the product (issue 16): the HIL bench, the demo
stack, the emulated shoe and jackpot display, the fake shoe of the unit tests, the fake GPIO board's control
socket, the bench's launcher of the service and the table test harness.

A distribution of its own (bench/pyproject.toml), installed beside the product by scripts/setup-env
(``pip install -e ./bench``); the product never imports it. Its `tablectl` subcommands (``demo``, ``bench``,
``emulate-shoe``, ``emulate-display``) are registered through the ``tablectl.commands`` entry points."""

from pathlib import Path

# The checkout this package runs from (installed editable from bench/): the demo and the bench read its
# firmware_configs/ and hil_tests/benches/.
ROOT = Path(__file__).resolve().parents[2]
