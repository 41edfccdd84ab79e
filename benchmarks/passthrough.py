"""The latency baseline: shoe frames straight to MQTT, no table logic, no journal, no fsync.

The same serial link as the controller (pty, framing, CRC, acks: ``ShoeDriver``), then each card as one JSON
line into ``mosquitto_pub -l -q 1`` (one PUBLISH per line). Started by benchmarks/latency.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from drivers import events as ev
from drivers.shoe import ShoeDriver


async def main(a: argparse.Namespace) -> None:
    pub = await asyncio.create_subprocess_exec(
        *["mosquitto_pub", "-h", a.host, "-p", str(a.port), "-u", a.user, "-P", a.password],
        *["-q", "1", "-l", "-t", a.topic],
        stdin=asyncio.subprocess.PIPE,
    )
    assert pub.stdin is not None
    driver = ShoeDriver(a.shoe)
    await driver.start()
    print("ready", flush=True)
    async for event in driver.events():
        if isinstance(event, ev.CardOut):
            pub.stdin.write(json.dumps({"shoe_seq": event.shoe_seq, "code": event.code}).encode() + b"\n")
            await pub.stdin.drain()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    for name in ("shoe", "host", "user", "password", "topic"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--port", type=int, required=True)
    asyncio.run(main(p.parse_args()))
