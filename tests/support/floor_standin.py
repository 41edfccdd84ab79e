"""Run a ``StandInTable`` as its own process (the floor's namespace HIL test starts one per table host):
publishes ``--events`` events at ``--rate`` per second (a signed checkpoint every ``--checkpoint-every``), answers
re-fetch requests (docs/reliability.md), prints ``published <last event_id>`` and keeps serving until stdin closes.

    python -m tests.support.floor_standin --port 1883 --site S1 --table T1 --events 100 --rate 20
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.support.floor import StandInTable


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=1883)
    ap.add_argument("--site", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--events", type=int, default=100)
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--checkpoint-every", type=int, default=25)
    args = ap.parse_args()
    deadline = time.monotonic() + 30
    while True:
        try:
            table = StandInTable(args.host, args.port, args.site, args.table)
            break
        except (OSError, AssertionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    sw = {"version": "0.1.0", "audit_public_key": table.public_key}
    table.publish("state/software", "state", sw, retain=True)
    seq = 0
    for i in range(1, args.events + 1):
        table.publish("events/round", "round", {"round_id": f"r{i // 10}", "phase": "decision", "n": i})
        if i % args.checkpoint_every == 0:
            seq += 10
            table.checkpoint(seq)
        time.sleep(1 / args.rate)
    table.flush(120)
    print(f"published {table.next_id - 1}", flush=True)
    sys.stdin.read()  # serve re-fetches until the test closes our stdin
    table.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
