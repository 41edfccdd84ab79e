"""A bare table controller process for crash tests and the bench: a shoe on a serial port, a journal, and JSON
lines on stdin/stdout instead of MQTT.

    python -m tablebench.table_process --port /tmp/x/shoe --db /tmp/x/journal.db [--fast-link]

Each stdin line is one request, answered by one stdout line:
``{"op": "dealer", "action": "place_bet", "args": {...}}``,
``{"op": "supervisor", "user": "ana", "action": ...}``, ``{"op": "view"}``.
Answers: ``{"ok": true, ...}`` or ``{"ok": false, "error": reason}``.
The service wiring (MQTT, GPIO, alerts) lives in controller/service/table_service.py; this is deliberately minimal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import Any

from controller.effects import Rejected
from controller.journal.store import Journal
from controller.shell.controller import TableController
from drivers.shoe import ShoeDriver

FAST_DRIVER = {
    "ack_timeout": 0.05,
    "max_retries": 8,
    "silence_timeout": 1.0,
    "heartbeat_interval": 0.05,
    "reconnect_backoff": (0.02, 0.2),
}


async def _serve(args: argparse.Namespace) -> int:
    journal = Journal(args.db, table_id=args.table)
    driver = ShoeDriver(args.port, **(FAST_DRIVER if args.fast_link else {}))
    table = TableController(journal, driver, snapshot_every=args.snapshot_every)
    await driver.start()
    await table.start()
    loop = asyncio.get_running_loop()
    for _ in range(int(args.wait_link / 0.02)):  # for scripted callers: answer once the shoe is reachable
        if driver.connected:
            break
        await asyncio.sleep(0.02)
    print(
        json.dumps({"ok": True, "ready": True, "replayed": table.replayed, "state": table.core.state}),
        flush=True,
    )
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            reply = await _handle(table, line)
            print(json.dumps(reply, sort_keys=True), flush=True)
    finally:
        await table.stop()
        await driver.stop()
        journal.close()
    return 0


async def _handle(table: TableController, line: str) -> dict[str, Any]:
    try:
        req = json.loads(line)
        op = req.get("op")
        if op == "view":
            return {"ok": True, "view": table.view()}
        if op == "dealer":
            return await table.dealer_input(req["action"], req.get("args") or {})
        if op == "supervisor":
            return await table.supervisor_action(req["user"], req["action"], req.get("args") or {})
        return {"ok": False, "error": f"unknown op {op!r}"}
    except Rejected as exc:
        return {"ok": False, "error": exc.reason}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return {"ok": False, "error": f"bad request: {exc}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tablebench.table_process", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--port", required=True, help="shoe serial port (or pty symlink)")
    parser.add_argument("--db", required=True, help="journal database")
    parser.add_argument("--table", default="T1", help="table id in published events")
    parser.add_argument("--snapshot-every", type=int, default=100, help="inputs between snapshots")
    parser.add_argument("--fast-link", action="store_true", help="short link timeouts (emulator tests)")
    parser.add_argument(
        "--wait-link", type=float, default=10.0, help="seconds to wait for the shoe before ready"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return asyncio.run(_serve(args))


if __name__ == "__main__":
    sys.exit(main())
