"""Floor alerts: open until a supervisor acknowledges (PT-2001 r.51), escalation, restart, retained list."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.broker import Recorder, link_config, new_topics

from controller.journal.store import Journal
from controller.mqtt.alerts import AlertBook, AlertError, AlertManager
from controller.mqtt.link import MqttLink
from controller.mqtt.publisher import OutboxPublisher
from controller.mqtt.schemas import validate_message
from tablebench.broker import Broker


class Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


def outbox_topics(journal: Journal) -> list[str]:
    rows = journal.outbox_pending(0, 1000)
    for r in rows:
        validate_message(r.topic, r.payload.encode())  # every message we would publish is schema-valid
    return [r.topic for r in rows]


def test_pure_book_raise_ack_escalate_roundtrip() -> None:
    book, _a = AlertBook().raised("jam", "warning", "shoe jammed at output", 10.0, rule="PT-2001 r.51")
    book, _b = book.raised("tamper", "critical", "lid forced", 11.0)
    assert [x.alert_id for x in book.open] == [1, 2]
    assert book.due(10.0 + 59, 60) == [] and [x.alert_id for x in book.due(10.0 + 60, 60)] == [1]
    book, up = book.escalated(1, 70.0)
    assert up.level == 1 and up.severity == "critical"
    assert [x.alert_id for x in book.due(100.0, 60)] == [2]  # 1 restarted its clock at 70
    book, acked = book.acknowledged(1, "alice", 80.0)
    assert acked.acked_by == "alice" and [x.alert_id for x in book.open] == [2]
    assert AlertBook.from_dict(book.to_dict()) == book
    with pytest.raises(AlertError, match="not open"):
        book.acknowledged(1, "alice", 90.0)
    with pytest.raises(AlertError, match="alert kind"):
        book.raised("coffee", "info", "x", 1.0)


def test_raise_ack_escalate_journaled_and_published(tmp_path: Path) -> None:
    clock = Clock()
    journal = Journal(tmp_path / "j.db", table_id="T1", clock=clock)
    alerts = AlertManager(journal, escalate_after_s=120, clock=clock)
    jam = alerts.raise_alert(
        "jam", "warning", "shoe jammed", rule="PT-2001 r.51", details={"location": "output"}
    )
    alerts.raise_alert("jackpot_pending", "info", "seat 3 hit 2 suited aces")
    clock.t += 119
    assert alerts.escalate_due() == []
    clock.t += 1
    escalated = alerts.escalate_due()
    assert [a.alert_id for a in escalated] == [1, 2] and all(a.level == 1 for a in escalated)
    acked = alerts.acknowledge(jam.alert_id, "alice")
    assert acked.acked_by == "alice" and [a.alert_id for a in alerts.open_alerts] == [2]
    actions = [r.data["action"] for r in journal.records(kinds=("alert",))]
    assert actions == ["raised", "raised", "escalated", "escalated", "acknowledged"]
    assert outbox_topics(journal).count("alerts/open") == 5
    # Restart: the book is rebuilt from the journal, open alert 2 still escalates later.
    journal.close()
    journal = Journal(tmp_path / "j.db", table_id="T1", clock=clock)
    again = AlertManager(journal, escalate_after_s=120, clock=clock)
    assert again.book == alerts.book
    clock.t += 120
    assert [a.level for a in again.escalate_due()] == [2]
    assert again.raise_alert("tamper", "critical", "x").alert_id == 3  # ids never reused


def test_alert_in_callers_transaction_rolls_back_with_it(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db", table_id="T1")
    alerts = AlertManager(journal)
    with pytest.raises(RuntimeError), journal.transaction() as tx:
        alerts.raise_alert("jam", "warning", "jammed", tx=tx)
        raise RuntimeError("state change failed")
    assert alerts.open_alerts == () and journal.outbox_size() == 0
    with journal.transaction() as tx:
        tx.append("jam", {"location": "input"})
        alerts.raise_alert("jam", "warning", "jammed", tx=tx)
        assert alerts.open_alerts == ()  # applied only on COMMIT
    assert [a.kind for a in alerts.open_alerts] == ["jam"]
    with pytest.raises(AlertError):
        alerts.acknowledge(99, "alice")


async def test_console_connecting_later_sees_open_alerts(mqtt_broker: Broker, tmp_path: Path) -> None:
    topics = new_topics()
    journal = Journal(tmp_path / "j.db", table_id="T1")
    link = MqttLink(link_config(mqtt_broker), topics)
    OutboxPublisher(journal, link).start()
    await link.start()
    alerts = AlertManager(journal)
    a = alerts.raise_alert("forced_lid", "critical", "lid forced open", rule="PT-2001 r.60")
    alerts.raise_alert("display_fault", "warning", "jackpot display silent")
    alerts.acknowledge(a.alert_id, "alice")
    while journal.outbox_size():
        await asyncio.sleep(0.02)
    console = Recorder(mqtt_broker, "supervisor1", topics, filters=("alerts/open",)).start()
    await console.await_for(lambda m: len(m) >= 1)
    (doc,) = console.on("alerts/open")
    assert [x["kind"] for x in doc["data"]["alerts"]] == ["display_fault"]
    assert not console.invalid
    console.stop()
    await link.stop()
    journal.close()
