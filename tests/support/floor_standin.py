"""Run a ``StandInTable`` as its own process (the floor's namespace HIL test starts one per table host):
publishes ``--events`` events at ``--rate`` per second (a signed checkpoint every ``--checkpoint-every``), answers
re-fetch requests (docs/reliability.md), prints ``published <last event_id>`` and keeps serving until stdin closes.
``--expired 37,38``: those events are never delivered and are past the table's retention (the floor must name
them missing); ``--dump FILE``: every kept envelope, ``<event_id> <hex bytes>`` a line, written before
``published``; ``--lost-tail N``: the last N events are kept but never delivered (a broker dropped them) and the
table is idle after them: only its head (``link/head``, every ``--head-every`` seconds) tells the floor.

    python -m tests.support.floor_standin --port 1883 --site S1 --table T1 --events 100 --rate 20
"""

from __future__ import annotations

import argparse
import sys
import threading
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
    ap.add_argument("--expired", default="", help="event ids never delivered and no longer kept")
    ap.add_argument("--dump", default=None)
    ap.add_argument("--lost-tail", type=int, default=0, help="the last N events kept but never delivered")
    ap.add_argument("--head-every", type=float, default=2.0, help="seconds between two link/head")
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
    expired = {int(x) for x in args.expired.split(",") if x}
    stop = threading.Event()

    def heads() -> None:
        while not stop.wait(args.head_every):
            table.publish_head()

    beat = threading.Thread(target=heads, daemon=True)
    beat.start()
    for i in range(1, args.events + 1):
        data = {"round_id": f"r{i // 10}", "phase": "decision", "n": i}
        lost = i > args.events - args.lost_tail
        event_id = table.publish(
            "events/round", "round", data, deliver=table.next_id not in expired and not lost
        )
        table.forget(*(expired & {event_id}))
        if i % args.checkpoint_every == 0 and i <= args.events - args.lost_tail:
            seq += 10
            table.checkpoint(seq)
        time.sleep(1 / args.rate)
    table.flush(120)
    if args.dump:
        with open(args.dump, "w") as out:
            out.writelines(f"{i} {raw.hex()}\n" for i, raw in sorted(table.kept.items()))
    print(f"published {table.next_id - 1}", flush=True)
    sys.stdin.read()  # serve re-fetches until the test closes our stdin
    stop.set()
    table.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
