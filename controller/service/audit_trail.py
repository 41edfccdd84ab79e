"""The service's audit trail at start-up (docs/security.md, docs/reliability.md): the signed checkpoints of the
journal, ``cmd/replay`` (kept events served again) and the broker's retained checkpoint compared with the
journal (a journal cut short while the service was stopped shows up). Built and started before the broker
connects (controller/service/table_service.py); each is stopped on its own at shutdown."""

from __future__ import annotations

from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import public_key_hex
from controller.config import TableConfig
from controller.journal import Journal
from controller.journal.checkpointer import INTERVAL_S, ROUND_END_KINDS, Checkpointer
from controller.mqtt.alerts import RECORD_KIND as ALERT_RECORD
from controller.mqtt.anchor import BrokerAnchor
from controller.mqtt.link import MqttLink
from controller.mqtt.replay import ReplayServer


def start_audit_trail(
    config: TableConfig,
    journal: Journal,
    link: MqttLink,
    audit_key: Ed25519PrivateKey,
    head_at_open: int,
    *,
    on_forged: Callable[[str, int, str], None],
    on_mismatch: Callable[[int | None, str], None],
) -> tuple[Checkpointer, ReplayServer, BrokerAnchor]:
    """Started in this order; ``head_at_open``: the journal's last record before anything was written;
    ``on_forged(topic, event_id, reason)``: a kept event that fails its check; ``on_mismatch(seq, reason)``: the
    broker's checkpoint contradicts the journal."""
    t = config.table
    interval_s = config.audit.checkpoint_interval_s if config.audit else INTERVAL_S
    # a round's end and every alert (raised, acknowledged, closed) checkpoint at once: the floor shows a table's
    # state only once a checkpoint proves it (floor/archive/claims.py), and a fault should not wait for the interval
    checkpointer = Checkpointer(
        journal,
        audit_key,
        site=t.site,
        table=t.id,
        interval_s=interval_s,
        prompt_kinds=ROUND_END_KINDS | {ALERT_RECORD},
    )
    checkpointer.start()
    replay = ReplayServer(journal, link, retention_days=config.journal.event_retention_days)
    replay.on_forged = lambda event_id, reason: on_forged("replay", event_id, reason)
    replay.start()
    key_hex = public_key_hex(audit_key.public_key())
    anchor = BrokerAnchor(journal, link, key_hex, on_mismatch, start_head=head_at_open)
    anchor.start()
    return checkpointer, replay, anchor
