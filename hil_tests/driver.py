"""The bench driver library, for scripts next to the tests: everything lives in `controller/bench/`
(so `tablectl bench` uses the same code); this module gathers the names a bench script needs."""

from controller.bench import faults
from controller.bench.config import BenchConfig, BenchError, load_bench
from controller.bench.driver import Dealer
from controller.bench.reconcile import Reconciliation, reconcile
from controller.bench.rig import NeedsEmulator, Rig
from controller.bench.soak import SoakOptions, reconcile_rig, run_soak

__all__ = [
    "BenchConfig",
    "BenchError",
    "Dealer",
    "NeedsEmulator",
    "Reconciliation",
    "Rig",
    "SoakOptions",
    "faults",
    "load_bench",
    "reconcile",
    "reconcile_rig",
    "run_soak",
]
