"""Writes the signed checkpoints: at every round end, right after every record of a kind the service names as
urgent (``prompt_kinds``: an alert, so the floor can prove a fault's state at once), and at least every
``interval_s`` while records are written.

A checkpoint signs the chain head as it stands (record ``seq``, its ``hash``, the last ``event_id`` and the
published events' chain value there, ``event_chain``) and goes into
the journal as a ``checkpoint`` record (so it is chained itself) together with its outbox row on
``audit/checkpoint`` (retained, QoS 1): the publisher sends it like every event, after the commit. An idle table
writes none. Each checkpoint names the one before it (``prev_seq``/``prev_hash``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import GENESIS, Checkpoint, sign_checkpoint
from controller.journal.store import CHECKPOINT_KIND, Journal, Transaction, iso_ts

log = logging.getLogger(__name__)

TOPIC = "audit/checkpoint"  # relative to the table prefix (controller/topics.py)
EVENT_TYPE = "checkpoint"
INTERVAL_S = 60.0
ROUND_END_KINDS = frozenset({"round_settled", "round_void"})


class Checkpointer:
    def __init__(
        self,
        journal: Journal,
        key: Ed25519PrivateKey,
        *,
        site: str,
        table: str,
        interval_s: float = INTERVAL_S,
        prompt_kinds: frozenset[str] = ROUND_END_KINDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.journal = journal
        self.prompt_kinds = prompt_kinds
        self.key = key
        self.site = site
        self.table = table
        self.interval_s = interval_s
        self._clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._pending = False  # a checkpoint is scheduled on the loop
        self._last_at = clock()
        self._own_head = -1  # the journal's head right after our last checkpoint (nothing new since)
        self.written = 0
        self.failed = 0
        prev = journal.last_checkpoint_record()
        self._prev: tuple[int, str] = (
            (int(prev["seq"]), str(prev["hash"]))
            if isinstance(prev, dict) and "seq" in prev
            else (0, GENESIS)
        )

    def start(self) -> None:
        """Listen to the journal's commits; call from the asyncio loop."""
        self._loop = asyncio.get_running_loop()
        self.journal.add_commit_listener(self._on_commit)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_commit(self, tx: Transaction) -> None:
        kinds = {r.kind for r in tx.records}
        if not kinds or CHECKPOINT_KIND in kinds:
            return  # nothing written, or our own checkpoint
        if kinds & self.prompt_kinds or self._clock() - self._last_at >= self.interval_s:
            self._schedule(0.0)
        elif self._timer is None:
            self._schedule(max(0.0, self._last_at + self.interval_s - self._clock()))

    def _schedule(self, delay: float) -> None:
        """Never inside the commit that triggered it: a failure here must not look like that commit's."""
        if self._loop is None:
            self._write_logged()
            return
        if delay <= 0:
            if not self._pending:
                self._pending = True
                self._loop.call_soon(self._write_logged)
            return
        self._timer = self._loop.call_later(delay, self._write_logged)

    def _write_logged(self) -> None:
        self._pending = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            self.write()
        except Exception:  # a journal write failure is the service's fault to raise; try again later
            self.failed += 1
            log.exception("audit checkpoint not written")

    def write(self) -> Checkpoint | None:
        """Sign the head now and commit it (record + retained event). None when nothing new is there to sign."""
        j = self.journal
        if j.last_seq == 0 or j.last_seq == self._own_head:
            return None
        cp = sign_checkpoint(
            self.key,
            site=self.site,
            table=self.table,
            seq=j.last_seq,
            hash=j.last_hash,
            last_event_id=j.last_event_id,
            prev_seq=self._prev[0],
            prev_hash=self._prev[1],
            ts=iso_ts(self._clock()),
            event_chain=j.last_event_chain,
        )
        data = cp.to_dict()
        with j.transaction() as tx:
            tx.append(CHECKPOINT_KIND, data)
            tx.publish(TOPIC, EVENT_TYPE, data, retain=True)
        self._prev = (cp.seq, cp.hash)
        self._own_head = j.last_seq
        self._last_at = self._clock()
        self.written += 1
        return cp
