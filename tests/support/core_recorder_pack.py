"""Packs raw recordings (tests/support/core_recorder.py) into one gzip JSON-lines file for
tests/data/core_equivalence/: sessions renumbered, identical sessions kept once, sessions that never
called the core dropped.

    python tests/support/core_recorder_pack.py <raw dir> <out.jsonl.gz>
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from pathlib import Path

from core_replay import read_lines, sessions

from controller.canonical import canonical

REPLAYS = "tests/test_core_equivalence.py"  # recorded too when the whole suite runs with the recorder


def pack(raw: Path, out: Path) -> tuple[int, int, int]:
    seen: set[str] = set()
    kept = calls = dropped = 0
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        for path in sorted(raw.glob("*.jsonl")):
            for session in sessions(read_lines(path), path.name):
                body = [{k: v for k, v in ln.items() if k not in ("s", "test")} for ln in session.lines]
                if not session.calls or str(session.header.get("test", "")).startswith(REPLAYS):
                    dropped += 1  # nothing called, or the equivalence test's own replay of the old recording
                    continue
                digest = hashlib.sha256(canonical(body).encode()).hexdigest()
                if digest in seen:
                    dropped += 1
                    continue
                seen.add(digest)
                kept += 1
                calls += len(session.calls)
                for line in session.lines:
                    fh.write(canonical({**line, "s": kept}) + "\n")
    return kept, calls, dropped


if __name__ == "__main__":
    kept, calls, dropped = pack(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{sys.argv[2]}: {kept} sessions, {calls} calls ({dropped} duplicate or empty sessions dropped)")
