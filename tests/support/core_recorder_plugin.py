"""pytest plugin: ``CORE_RECORD_DIR=<dir> pytest -p core_recorder_plugin`` records every TableCore call of
the run (tests/support/core_recorder.py). Without ``CORE_RECORD_DIR`` it does nothing."""

from __future__ import annotations

import core_recorder


def pytest_configure(config: object) -> None:
    core_recorder.install()
