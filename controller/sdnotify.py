"""sd_notify(3) in pure Python: tell systemd we are ready, alive (watchdog), what we are doing, or stopping.

The unit is ``Type=notify``: the service sends ``READY=1`` only once the shoe's serial link, the journal and
the broker connection are up, so ``systemctl start`` (and anything ordered after the unit) waits for a table
that really works. With ``WatchdogSec=`` the service sends ``WATCHDOG=1`` at half the interval from its event
loop while it is healthy; a hung loop stops the pings and systemd restarts the service.

Everything is a no-op when ``$NOTIFY_SOCKET`` is unset (tests, the demo, a shell). A send that fails is logged
and reported as ``False``; it never raises into the service.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)


def _address(env: Mapping[str, str]) -> str | None:
    raw = env.get("NOTIFY_SOCKET")
    if not raw:
        return None
    if raw.startswith("@"):
        return "\0" + raw[1:]  # abstract namespace socket
    if raw.startswith("/"):
        return raw
    log.warning("NOTIFY_SOCKET=%r is neither a path nor an abstract socket; not notifying", raw)
    return None


def notify(*fields: str, env: Mapping[str, str] | None = None) -> bool:
    """Send ``fields`` (e.g. "READY=1", "STATUS=...") as one datagram. False if unset or the send failed."""
    address = _address(os.environ if env is None else env)
    if address is None:
        return False
    for f in fields:
        if "=" not in f or "\n" in f:
            raise ValueError(f"sd_notify field must be KEY=VALUE on one line, got {f!r}")
    payload = "\n".join(fields).encode("utf-8")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(payload, address)
    except OSError as exc:
        log.warning("sd_notify %s failed: %s", fields, exc)
        return False
    return True


def ready(status: str | None = None, *, env: Mapping[str, str] | None = None) -> bool:
    return notify("READY=1", *([f"STATUS={status}"] if status else []), env=env)


def status(text: str, *, env: Mapping[str, str] | None = None) -> bool:
    return notify(f"STATUS={text.replace(chr(10), ' ')}", env=env)


def watchdog(*, env: Mapping[str, str] | None = None) -> bool:
    return notify("WATCHDOG=1", env=env)


def stopping(status: str | None = None, *, env: Mapping[str, str] | None = None) -> bool:
    return notify("STOPPING=1", *([f"STATUS={status}"] if status else []), env=env)


def watchdog_interval(env: Mapping[str, str] | None = None) -> float | None:
    """systemd's watchdog timeout in seconds (``$WATCHDOG_USEC``), or None when none applies to this process.

    Ping at half of it. ``$WATCHDOG_PID``, when set, must be our pid (children inherit the variables).
    """
    env = os.environ if env is None else env
    usec = env.get("WATCHDOG_USEC")
    if not usec:
        return None
    pid = env.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None
    try:
        value = int(usec)
    except ValueError:
        log.warning("WATCHDOG_USEC=%r is not an integer; no watchdog", usec)
        return None
    return value / 1_000_000 if value > 0 else None


async def watchdog_loop(
    healthy: Callable[[], bool] = lambda: True, *, env: Mapping[str, str] | None = None
) -> None:
    """Ping the watchdog at half its interval while ``healthy()``; returns at once when there is no watchdog.

    Run it as a task on the service's loop: the pings stop when the loop hangs, which is the point.
    """
    interval = watchdog_interval(env)
    if interval is None:
        return
    while True:
        if healthy():
            watchdog(env=env)
        await asyncio.sleep(interval / 2)
