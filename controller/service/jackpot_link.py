"""A linked progressive's meter documents in the service (docs/jackpot.md "Linked progressive (table side)").

``LinkWatch`` subscribes to ``<prefix>/progressive/meter`` (the floor bridge carries the link's retained document
in; only the bridge writes that topic on the table's broker, firmware_configs/mosquitto/acl) and checks every
document (controller/jackpot/link_doc.py: size, shape, link name, Ed25519 signature with ``[jackpot]
link_public_key``, a seq above the last accepted one, and not older than ``link_timeout_s``). A refused document
is counted per reason and logged, never shown nor acted on. A valid one is kept for the sign (its meter, a prize
pending at a table) and becomes a core input only when it changes what the table does: the link up or down
(``JackpotLink``, on each transition only: no heartbeat is journaled) and a prize frozen for a hit at this table
(``LinkHitAwarded``). Without a valid running document for ``link_timeout_s`` the link goes down: linked chips
are refused (the core's ``state/jackpot`` says why) and the sign shows "progressive unavailable".
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from controller.effects import Rejected
from controller.jackpot.config import JackpotConfig
from controller.jackpot.link_doc import LinkDocRefused, LinkDocument, verify
from controller.mqtt.link import InboundMessage, MqttLink
from controller.shell.controller import TableController
from controller.table import inputs
from controller.topics import PROGRESSIVE_METER
from drivers.aio import cancel_tasks

log = logging.getLogger("tablectl.service")

CHECK_EVERY_S = 0.5  # how often the timeout is looked at
LOG_EVERY = 100  # a refusal reason is logged at its 1st, 101st, ... occurrence (a flood fills no disk)


class LinkWatch:
    def __init__(
        self,
        config: JackpotConfig,
        table_id: str,
        table: TableController,
        link: MqttLink,
        on_change: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        assert config.link is not None and config.link_public_key is not None
        self.name = config.link
        self.key = bytes.fromhex(config.link_public_key)
        self.timeout_s = config.timeout_s
        self.table_id = table_id
        self.table = table
        self.mqtt = link
        self.on_change = on_change  # the sign's feed: show the newest document
        self.clock = clock
        self.latest: LinkDocument | None = None  # the newest valid document (what the sign shows)
        self.last_valid = 0.0  # clock() of the newest valid running document
        self.refused: collections.Counter[str] = collections.Counter()  # reason -> documents refused
        self.accepted = 0
        self._awarded: set[int] = set()  # hit ids submitted by this process
        self._tasks: list[asyncio.Task[Any]] = []
        self._pending: set[asyncio.Task[Any]] = set()  # documents being handled (asyncio holds tasks weakly)
        self._busy = asyncio.Lock()  # one document at a time, in the order they came

    # ---- the core's view of the link ----
    def _linked(self) -> Any:
        return getattr(self.table.core.jackpot, "linked", None)

    @property
    def up(self) -> bool:
        linked = self._linked()
        return bool(linked is not None and linked.up)

    # ---- lifecycle ----
    async def start(self) -> None:
        self.mqtt.subscribe(PROGRESSIVE_METER, self._on_message)
        self._tasks.append(asyncio.create_task(self._watch(), name="jackpot-link-timeout"))

    async def stop(self) -> None:
        await cancel_tasks([*self._tasks, *self._pending])
        self._tasks.clear()

    # ---- documents ----
    def _on_message(self, msg: InboundMessage) -> None:
        task = asyncio.get_running_loop().create_task(self.handle(msg.payload))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _last_seq(self) -> int | None:
        linked = self._linked()
        journaled = int(linked.seq) if linked is not None and linked.seq else None
        mine = self.latest.seq if self.latest is not None else None
        known = [s for s in (journaled, mine) if s is not None]
        return max(known) if known else None

    async def handle(self, raw: bytes) -> LinkDocument | None:
        """Check one document and act on it; None when it was refused (counted, logged)."""
        async with self._busy:
            try:
                doc = verify(raw, link=self.name, public_key=self.key, last_seq=self._last_seq())
                self._check_age(doc)
            except LinkDocRefused as exc:
                self._refuse(str(exc.reason), exc.detail)
                return None
            self.accepted += 1
            self.latest = doc
            if doc.running:
                self.last_valid = self.clock()
            await self._status(
                doc.running, "" if doc.running else "suspended by the link's controller", doc.seq
            )
            for hit in doc.hits_for(self.table_id):
                await self._award(hit)
            self.on_change()
            return doc

    def _check_age(self, doc: LinkDocument) -> None:
        """A document older than ``link_timeout_s`` (a retained one left by a controller that died) does not
        make the link up."""
        try:
            ts = datetime.fromisoformat(doc.ts.replace("Z", "+00:00"))
        except ValueError:
            raise LinkDocRefused.stale(f"ts {doc.ts!r} is not a time") from None
        age = time.time() - ts.timestamp()
        if age > self.timeout_s:
            raise LinkDocRefused.stale(f"{age:.0f} s old (at most {self.timeout_s} s)")

    def _refuse(self, reason: str, detail: str) -> None:
        self.refused[reason] += 1
        n = self.refused[reason]
        if n % LOG_EVERY == 1:
            log.warning(
                "progressive %s: meter document refused (%s: %s); %d refused for this reason",
                self.name, reason, detail, n,
            )  # fmt: skip

    async def _status(self, up: bool, reason: str, seq: int) -> None:
        linked = self._linked()
        if linked is None:
            return  # the table is not open on the link yet: the status enters at the next document
        if up == bool(linked.up) and (up or reason == linked.reason):
            return
        await self._submit(inputs.JackpotLink(up, reason, seq))

    async def _award(self, hit: Any) -> None:
        linked = self._linked()
        if linked is None or hit.hit_id in self._awarded or linked.known(hit.hit_id):
            return
        self._awarded.add(hit.hit_id)
        await self._submit(
            inputs.LinkHitAwarded(
                self.name, hit.hit_id, hit.round_id, hit.seat, hit.combination, hit.amount_minor, hit.order
            )
        )

    async def _submit(self, inp: inputs.Input) -> None:
        try:
            await self.table.submit(inp)
        except Rejected as exc:
            log.error("progressive %s: %s refused: %s", self.name, type(inp).__name__, exc.reason)
        except Exception:
            log.exception("progressive %s: %s failed", self.name, type(inp).__name__)

    # ---- the timeout ----
    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            await self.check()

    async def check(self) -> None:
        """The link down after ``link_timeout_s`` without a valid running document; up when the table opened on
        the link after a document that is still fresh."""
        if self._timed_out():
            async with self._busy:
                if self._timed_out():
                    why = f"no valid meter document for {self.timeout_s} s"
                    seq = self.latest.seq if self.latest is not None else 0
                    await self._submit(inputs.JackpotLink(False, why, seq))
                    self.on_change()
        elif self._fresh_but_down():  # the table opened on the link after the last document
            async with self._busy:
                await self._status(True, "", self.latest.seq if self.latest is not None else 0)
                self.on_change()

    def _timed_out(self) -> bool:
        return self.up and self.clock() - self.last_valid > self.timeout_s

    def _fresh_but_down(self) -> bool:
        doc = self.latest
        fresh = doc is not None and doc.running and self.clock() - self.last_valid <= self.timeout_s
        return fresh and not self.up and self._linked() is not None
