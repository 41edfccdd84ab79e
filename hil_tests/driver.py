"""The bench driver library, for scripts next to the tests: everything lives in `bench/tablebench/bench/`
(so `tablectl bench` uses the same code); this module gathers the names a bench script needs."""

from tablebench.bench import faults
from tablebench.bench.config import BenchConfig, BenchError, load_bench
from tablebench.bench.driver import Dealer
from tablebench.bench.reconcile import Reconciliation, reconcile
from tablebench.bench.rig import NeedsEmulator, Rig
from tablebench.bench.soak import SoakOptions, reconcile_rig, run_soak

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
