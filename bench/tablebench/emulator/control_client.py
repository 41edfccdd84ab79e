"""Client of the emulated shoe's control socket (JSON lines), for tests and the bench.

async with await ControlClient.connect("/tmp/tablectl-shoe.ctl") as ctl:
    await ctl.queue(["AS", "KD"]); await ctl.draw(2); print(await ctl.state())
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from types import TracebackType
from typing import Any


class ControlCallError(RuntimeError):
    """The emulator refused a control request (the message is its error text)."""


class ControlClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    @classmethod
    async def connect(cls, path: str) -> ControlClient:
        reader, writer = await asyncio.open_unix_connection(path)
        return cls(reader, writer)

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()

    async def __aenter__(self) -> ControlClient:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.close()

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Send one request; return the reply or raise ControlCallError if ``ok`` is false."""
        async with self._lock:
            self._writer.write(json.dumps({"op": op, **args}).encode() + b"\n")
            await self._writer.drain()
            line = await self._reader.readline()
        if not line:
            raise ConnectionError("control socket closed")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise ControlCallError(reply.get("error", "refused"))
        return reply

    async def state(self) -> dict[str, Any]:
        return (await self.call("state"))["state"]

    async def queue(self, cards: list[str]) -> int:
        return int((await self.call("queue", cards=cards))["queued"])

    async def draw(self, count: int = 1) -> int:
        return int((await self.call("draw", count=count))["drawn"])

    async def insert(self, count: int | None = None, cards: list[str] | None = None) -> None:
        args: dict[str, Any] = {}
        if count is not None:
            args["count"] = count
        if cards is not None:
            args["cards"] = cards
        await self.call("insert", **args)

    async def close_lid(self) -> None:
        await self.call("close_lid")

    async def force_lid(self) -> None:
        await self.call("force_lid")

    async def jam(self, location: str = "output") -> None:
        await self.call("jam", location=location)

    async def clear_jam(self) -> None:
        await self.call("clear_jam")

    async def unplug(self, seconds: float) -> None:
        await self.call("unplug", seconds=seconds)

    async def silence(self, seconds: float) -> None:
        await self.call("silence", seconds=seconds)

    async def set_error_rate(
        self,
        *,
        bit_error_rate: float | None = None,
        byte_error_rate: float | None = None,
        drop_rate: float | None = None,
        direction: str = "both",
    ) -> None:
        args: dict[str, Any] = {
            k: v
            for k, v in (
                ("bit_error_rate", bit_error_rate),
                ("byte_error_rate", byte_error_rate),
                ("drop_rate", drop_rate),
            )
            if v is not None
        }
        await self.call("set_error_rate", direction=direction, **args)

    async def unreadable(self, damaged: bool = False) -> None:
        await self.call("unreadable", damaged=damaged)

    async def face_up(self) -> None:
        await self.call("face_up")

    async def lose_acks(self, count: int = 1) -> None:
        await self.call("lose_acks", count=count)

    async def dealt(self, since: int = 0) -> list[dict[str, Any]]:
        """Every card out since the emulator started (from index ``since``): n, shoe_seq, code, flags."""
        out: list[dict[str, Any]] = []
        while True:
            reply = await self.call("dealt", since=since + len(out), limit=500)
            out.extend(reply["dealt"])
            if not reply["dealt"] or since + len(out) >= int(reply["total"]):
                return out

    async def forge(self, card: str, shoe_seq: int) -> int:
        """A card frame no card came out for (a hostile firmware): returns its event number."""
        return int((await self.call("forge", card=card, shoe_seq=shoe_seq))["event_no"])

    async def send_raw(self, data: bytes) -> None:
        await self.call("send_raw", hex=data.hex())
