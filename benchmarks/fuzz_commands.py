"""Fuzz the MQTT command intake (CommandIntake.process): malformed, mutated and forged commands.

    .venv/bin/python benchmarks/fuzz_commands.py [--commands 100000] [--seed 1]

Nothing may crash; every input gets an answer and a journal row (or is a retry answered from the record); no
forged or replayed signed command may reach the handler; a dealer command reaches it only when schema-valid.
Hostile inputs include invalid UTF-8, lone surrogates, nesting up to 100,000 levels, numbers beyond int()'s
digit limit and infinities. Exit status 1 otherwise. Results: docs/reliability.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablebench.bench.fuzz import fuzz_commands


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commands", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rep = fuzz_commands(a.commands, a.seed)
    print("\n".join(rep.lines()))
    return 1 if rep.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
