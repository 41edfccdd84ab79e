"""The broker's retained ``audit/checkpoint`` as an anchor the table's files cannot rewrite.

At start-up the journal's own checks cannot see a journal cut short while the service was stopped (the chain up
to the cut is intact, and the last checkpoint records went with the cut). The broker still holds the last
checkpoint the table published (retained): when the link comes up the controller reads it back, checks that the
table's key signed it, and that the journal has that record with that hash. A mismatch is reported through
``on_mismatch(seq, reason)`` (the service raises a critical ``journal_integrity`` alert).

Checked once, on the first retained copy received (on a fresh broker that may be the table's own checkpoint,
delivered again as retained after the broker restarted: a record written since start-up is then compared by its
hash like any other, which a cut and rewritten journal cannot match); a checkpoint signed by another key
(someone else's publish) is reported too. After ``tablectl journal prune`` the broker may hold a checkpoint of a
record before the journal's anchor: the one the anchor itself signs is compared with the anchor's ``prev_hash``, an
older one is not a mismatch (its records are in the archive; the prune is a chained ``journal_pruned`` record the
start-up check requires). The broker is not trusted for more than this: an empty broker (new, or its store lost)
proves nothing and is not reported.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from controller.audit.checkpoint import CheckpointError, verify_checkpoint
from controller.journal.store import Journal
from controller.mqtt.link import InboundMessage, MqttLink
from controller.topics import AUDIT_CHECKPOINT

log = logging.getLogger(__name__)


class BrokerAnchor:
    def __init__(
        self,
        journal: Journal,
        link: MqttLink,
        public_key: str,
        on_mismatch: Callable[[int | None, str], None],
        *,
        start_head: int | None = None,
    ) -> None:
        self.journal = journal
        self.link = link
        self.public_key = public_key
        self.on_mismatch = on_mismatch
        # The head as found at start-up (create the anchor before the table writes anything): records written
        # since must not hide a cut.
        self.start_head = journal.last_seq if start_head is None else start_head
        self.checked: bool = False
        self.result: str | None = None  # None: not checked yet; "ok" or the reason

    def start(self) -> None:
        """Subscribe (call before ``link.start()``)."""
        self.link.subscribe(AUDIT_CHECKPOINT, self._on_message)

    def _on_message(self, msg: InboundMessage) -> None:
        if self.checked or not msg.retain:
            return  # live copies are our own publishes
        self.checked = True
        seq, reason = self.check(msg.payload)
        self.result = reason or "ok"
        if reason:
            log.critical("journal: %s", reason)
            self.on_mismatch(seq, reason)

    def check(self, payload: bytes) -> tuple[int | None, str | None]:
        """(seq, reason) when the journal contradicts the broker's checkpoint; (seq, None) when it agrees."""
        try:
            doc = json.loads(payload)
            data = doc["data"] if isinstance(doc, dict) and "data" in doc else doc
            cp = verify_checkpoint(data, self.public_key)
        except (ValueError, KeyError, TypeError, CheckpointError) as exc:
            return None, f"the broker's retained audit/checkpoint is not the table's: {exc}"
        head = next(self.journal.records(after_seq=cp.seq - 1), None) if cp.seq > 0 else None
        agrees = head is not None and head.seq == cp.seq and head.hash == cp.hash
        if cp.seq > self.start_head:
            # Agreeing, it was written since start-up: the table's own checkpoint, delivered again as retained
            # after the broker restarted. Anything else: the journal was cut before start-up.
            return cp.seq, None if agrees else (
                f"record {cp.seq} is missing: the broker holds a checkpoint of record {cp.seq} but the journal"
                f" ended at record {self.start_head} at start-up (truncated)"
            )
        first = self.journal.first_seq()
        if first > 1 and cp.seq < first:  # pruned (controller/ops/prune.py): the anchor checkpoint record
            anchor = next(self.journal.records(after_seq=first - 1), None)  # (``Journal.verify`` checks it)
            if cp.seq == first - 1:  # signs the head it names: its prev_hash
                if anchor is None or anchor.prev_hash != cp.hash:
                    return cp.seq, f"record {cp.seq} differs from the checkpoint the broker holds (rewritten)"
                return cp.seq, None
            log.info(
                "journal: the broker's checkpoint of record %d predates the prune (anchor %d)", cp.seq, first
            )
            return cp.seq, None  # a checkpoint from before a prune: its records are in the archive
        if not agrees:
            return cp.seq, f"record {cp.seq} differs from the checkpoint the broker holds (rewritten)"
        return cp.seq, None
