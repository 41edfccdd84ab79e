"""Run-time control channel of the emulated shoe: a Unix socket speaking JSON lines (docs/emulator.md §3).

One request object per line -> one reply per line: ``{"ok": true, ...}`` or ``{"ok": false, "error": ...}``.
No op reveals the order of the cards still inside the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from typing import Any

from drivers import events as ev
from drivers.events import RANKS, SUITS, JamLocation
from tablebench.emulator.device import EmulatedShoe
from tablebench.emulator.model import Refused

log = logging.getLogger(__name__)

MAX_LINE = 64 * 1024


class ControlError(ValueError):
    pass


def _count(req: dict[str, Any], key: str = "count", default: int | None = 1, lo: int = 1) -> int | None:
    v = req.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= 10_000:
        raise ControlError(f"{key}: {v!r} is not an integer in {lo}..10000")
    return v


def _seconds(req: dict[str, Any]) -> float:
    v = req.get("seconds", 1.0)
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 3600:
        raise ControlError(f"seconds: {v!r} is not a number in 0..3600")
    return float(v)


def _cards(req: dict[str, Any]) -> list[str] | None:
    v = req.get("cards")
    if v is None:
        return None
    if not isinstance(v, list):
        raise ControlError("cards: expected a list of card codes like ['AS', 'TD']")
    return v


async def dispatch(shoe: EmulatedShoe, req: Any) -> dict[str, Any]:
    if not isinstance(req, dict) or not isinstance(req.get("op"), str):
        raise ControlError('request must be an object with an "op" string')
    op = req["op"]
    m = shoe.model
    match op:
        case "ping":
            return {}
        case "card_times":
            # benchmarks: when each card left the shoe (wall clock, s), oldest first; returned once, then
            # forgotten; at most ``limit`` per reply so it stays far below a client's line limit
            limit = _count(req, "limit", default=1000)
            assert limit is not None
            times = [list(shoe.card_times.popleft()) for _ in range(min(limit, len(shoe.card_times)))]
            return {"card_times": times, "left": len(shoe.card_times)}
        case "state":
            return {"state": shoe.state()}
        case "queue":
            cards = _cards(req)
            if cards is None:
                raise ControlError("queue: 'cards' is required")
            m.queue(cards)
            return {"queued": len(m.queued)}
        case "draw":
            n = _count(req)
            assert n is not None
            return {"drawn": shoe.draw(n)}
        case "insert":
            shoe.emit(m.insert(count=_count(req, default=None, lo=0), cards=_cards(req)))
            return {"cards_inside": m.cards_inside}
        case "close_lid":
            shoe.emit(m.close_lid())
            return {}
        case "force_lid":
            shoe.emit(m.force_lid())
            return {}
        case "jam":
            loc = req.get("location", "output")
            if loc not in list(JamLocation):
                raise ControlError(f"location: {loc!r} is not one of {[str(x) for x in JamLocation]}")
            shoe.emit(m.jam_now(JamLocation(loc)))
            return {}
        case "clear_jam":
            shoe.emit(m.clear_jam())
            return {}
        case "unplug":
            shoe.spawn(shoe.unplug(_seconds(req)))
            return {}
        case "silence":
            shoe.silence(_seconds(req))
            return {}
        case "set_error_rate":
            for key in ("bit_error_rate", "byte_error_rate", "drop_rate"):
                if key in req:
                    v = req[key]
                    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
                        raise ControlError(f"{key}: {v!r} is not a number in 0..1")
                    setattr(shoe.noise, key, float(v))
            direction = req.get("direction", "both")
            if direction not in ("both", "to_host", "to_device"):
                raise ControlError(f"direction: {direction!r} is not 'both', 'to_host' or 'to_device'")
            shoe.noise.direction = direction
            return {}
        case "unreadable":
            m.next_unreadable = bool(req.get("damaged", False))
            return {}
        case "face_up":
            m.next_face_up = True
            return {}
        case "lose_acks":
            shoe.link.ignore_acks = _count(req) or 0
            return {}
        case "dealt":
            since = req.get("since", 0)
            if isinstance(since, bool) or not isinstance(since, int) or since < 0:
                raise ControlError(f"since: {since!r} is not an integer >= 0")
            limit = _count(req, "limit", default=500)  # one reply stays far below the client's line limit
            assert limit is not None
            return {"dealt": m.dealt[since : since + limit], "total": len(m.dealt)}
        case "forge":
            # A hostile or broken shoe firmware (issue 13 §5): a card frame through the reliable link, with a
            # valid CRC, SEQ and event number, that no card behind it came out for. The model is unchanged.
            code = str(req.get("card", ""))
            if len(code) != 2 or code[0] not in RANKS or code[1] not in SUITS:
                raise ControlError(f"card: {code!r} is not a card code like 'AS'")
            seq = req.get("shoe_seq")
            if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= 0xFFFF:
                raise ControlError(f"shoe_seq: {seq!r} is not an integer in 0..65535")
            shoe.emit([ev.CardOut(code[0], code[1], seq)])
            return {"event_no": shoe.events.event_no}
        case "send_raw":
            try:
                data = bytes.fromhex(str(req.get("hex", "")))
            except ValueError as exc:
                raise ControlError(f"hex: {exc}") from exc
            shoe.write_raw(data)
            return {"sent": len(data)}
    raise ControlError(f"unknown op {op!r}")


class ControlServer:
    def __init__(self, shoe: EmulatedShoe, path: str) -> None:
        self.shoe = shoe
        self.path = path
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._server = await asyncio.start_unix_server(self._client, path=self.path, limit=MAX_LINE)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                reply: dict[str, Any]
                try:
                    reply = {"ok": True, **(await dispatch(self.shoe, json.loads(line)))}
                except json.JSONDecodeError as exc:
                    reply = {"ok": False, "error": f"not JSON: {exc}"}
                except (ControlError, ValueError) as exc:
                    reply = {"ok": False, "error": str(exc)}
                except Refused as exc:
                    reply = {"ok": False, "error": exc.text, "code": int(exc.code)}
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
            log.info("control: client dropped: %s", exc)
        except asyncio.CancelledError:
            # Shutdown (SIGINT/SIGTERM) with a client still connected: end quietly. Re-raising makes Python
            # 3.11's start_unix_server callback log a CancelledError traceback on stderr (docs/emulator.md:
            # the emulator stops cleanly with status 0).
            pass
        finally:
            writer.close()
