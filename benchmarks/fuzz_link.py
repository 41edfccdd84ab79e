"""Fuzz the shoe link parser (drivers/protocol): mutated and random frames, no crash allowed.

    .venv/bin/python benchmarks/fuzz_link.py [--frames 1000000] [--seed 1]

Prints the counters; exit status 1 if any input raised anything but a refusal. Results: docs/reliability.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablebench.bench.fuzz import fuzz_link


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rep = fuzz_link(a.frames, a.seed)
    print("\n".join(rep.lines()))
    return 1 if rep.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
