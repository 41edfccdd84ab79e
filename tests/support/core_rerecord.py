"""Re-records sessions of a packed recording (tests/data/core_equivalence/) after a deliberate change of the table
core's behaviour: each chosen session is replayed with its recorded inputs through the current core, and the
results and state hashes that differ are replaced by the current core's. Only the sessions named change; every
other session is copied as it is (so the equivalence test still holds the rest of the core to its recording).

    python tests/support/core_rerecord.py <in.jsonl.gz> <out.jsonl.gz> SESSION_ID...

Sessions are named by their number in the file (``suite.jsonl.gz/13`` in a mismatch report is 13). The bench
soak is not reproducible call for call (a running service, faults at real times), so re-recording its affected
session this way (its own inputs, the new core's answers) is the only way to change just that session.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from core_replay import read_lines, replay, sessions

from controller.canonical import canonical


def rerecord(src: Path, out: Path, ids: set[str]) -> dict[str, int]:
    """Returns {session id: calls replaced} for the sessions named."""
    changed: dict[str, int] = {}
    found = sessions(read_lines(src), src.name)
    for session in found:
        sid = str(session.header["s"])
        if sid in ids:
            changed[sid] = replay(session, rewrite=True)
    missing = ids - {str(s.header["s"]) for s in found}
    if missing:
        raise SystemExit(f"{src}: no session {', '.join(sorted(missing))}")
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        for session in found:
            for line in session.lines:
                fh.write(canonical(line) + "\n")
    return changed


if __name__ == "__main__":
    done = rerecord(Path(sys.argv[1]), Path(sys.argv[2]), set(sys.argv[3:]))
    for sid, n in sorted(done.items(), key=lambda kv: int(kv[0])):
        print(f"session {sid}: {n} calls re-recorded")
