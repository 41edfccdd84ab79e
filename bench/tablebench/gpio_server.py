"""A unix socket (JSON lines) through which a bench drives the FakeBoard of a service in another process.

Started by the bench's own launcher of the service (``python -m tablebench.service --gpio-control SOCKET``,
tablebench/service.py); the product service has no such socket.

Requests, one JSON object per line, each answered by one JSON line (`{"ok": true, ...}` or
`{"ok": false, "error": "..."}`):
- `{"op": "press", "name": "button_hit"}`: a button press (high, then low)
- `{"op": "set", "name": "chip_slot_3", "value": true}`: an input changes (already debounced)
- `{"op": "read", "name": "lid_lock"}`: `{"ok": true, "value": true}`
- `{"op": "outputs"}`: every signal's value and the history of output writes
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from typing import Any

from controller.gpio.fake import FakeBoard

FAKE_BACKEND = 'the fake GPIO backend ([gpio] backend = "fake")'


class FakeBoardServer:
    """``board``: the service's board as it is now (None until the service has set it up), so the socket
    can listen before the service starts and answers "not set up yet" until then."""

    def __init__(self, board: Callable[[], Any], path: str) -> None:
        self._board = board
        self.path = path
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._server = await asyncio.start_unix_server(self._client, path=self.path)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def handle(self, req: Any) -> dict[str, Any]:
        if not isinstance(req, dict) or not isinstance(req.get("op"), str):
            return {"ok": False, "error": "request must be a JSON object with an 'op'"}
        op, name = req["op"], req.get("name")
        board = self._board()
        if board is None:
            return {"ok": False, "error": "the service has not set up its GPIO board yet"}
        if not isinstance(board, FakeBoard):
            return {"ok": False, "error": f"the GPIO control socket needs {FAKE_BACKEND}"}
        try:
            if op == "press":
                board.pulse(str(name))
                return {"ok": True}
            if op == "set":
                board.set_input(str(name), bool(req.get("value")))
                return {"ok": True}
            if op == "read":
                return {"ok": True, "value": board.read(str(name))}
            if op == "outputs":
                return {"ok": True, "values": dict(board.values), "history": board.history[-200:]}
        except (KeyError, ValueError) as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": False, "error": f"unknown op {op!r}"}

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    reply = self.handle(json.loads(line))
                except json.JSONDecodeError as exc:
                    reply = {"ok": False, "error": f"bad JSON: {exc}"}
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        finally:
            writer.close()


async def call(path: str, op: str, **args: Any) -> dict[str, Any]:
    """One request to a FakeBoardServer (bench side)."""
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        writer.write(json.dumps({"op": op, **args}).encode() + b"\n")
        await writer.drain()
        return json.loads(await reader.readline())
    finally:
        writer.close()
