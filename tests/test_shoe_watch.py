"""The shoe watch (controller/service/shoe_watch.py): which shoe outages it says with its own `link_down` alert
(key shoe_absent) and which it leaves to the table's link fault, its severity, one alert per outage across
restarts, and the alert closing itself once the shoe answers. A real journal and alert book; the shoe and the
table are stand-ins for what the watch reads of them (the whole service: tests/test_service_shoe_absent.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from controller.journal.store import Journal
from controller.mqtt.alerts import AlertManager
from controller.service.shoe_watch import ShoeWatch
from controller.shell.controller import TableController

ABSENT = "not plugged in: serial port '/dev/tablectl-shoe' not found"


@dataclass
class Shoe:
    """What the watch reads of drivers/shoe.py's ShoeDriver."""

    connected: bool = False
    problem: str = ""
    ever_connected: bool = False
    port: str = "/dev/tablectl-shoe"


@dataclass
class Gate:
    session: bool  # a session uses the shoe: a lost link would be the table's link_down fault

    def may(self, trigger: str) -> bool:
        assert trigger == "link_lost"
        return self.session


@dataclass
class Core:
    session: bool = False
    faults: dict[str, Any] = field(default_factory=dict)

    @property
    def gate(self) -> Gate:
        return Gate(self.session)


@dataclass
class Table:
    core: Core = field(default_factory=Core)


def watch(tmp_path: Path, shoe: Shoe, table: Table) -> tuple[ShoeWatch, AlertManager]:
    alerts = AlertManager(Journal(tmp_path / "journal.db", table_id="T1"), escalate_after_s=120)
    return ShoeWatch(shoe, alerts, cast(TableController, table)), alerts


def absent(alerts: AlertManager) -> list[Any]:
    return [a for a in alerts.open_alerts if a.kind == "link_down" and a.details.get("key") == "shoe_absent"]


def test_nothing_is_said_before_the_first_attempt_has_failed(tmp_path: Path) -> None:
    w, alerts = watch(tmp_path, Shoe(), Table())
    w.tick()
    assert alerts.open_alerts == ()


def test_a_closed_table_without_its_shoe_warns_once_and_the_alert_closes_when_the_shoe_answers(
    tmp_path: Path,
) -> None:
    shoe = Shoe(problem=ABSENT)
    w, alerts = watch(tmp_path, shoe, Table())
    w.tick()
    w.tick()  # the same outage: still one alert
    [alert] = absent(alerts)
    assert alert.severity == "warning" and ABSENT in alert.reason and alert.details["port"] == shoe.port
    shoe.connected, shoe.problem, shoe.ever_connected = True, "", True
    w.tick()
    assert absent(alerts) == []
    acked = [
        r for r in alerts.journal.records() if r.kind == "alert" and r.data.get("action") == "acknowledged"
    ]
    assert acked and acked[-1].data["alert"]["acked_by"] == "tablectl"  # closed by itself, journaled


def test_a_session_restarted_without_its_shoe_is_critical(tmp_path: Path) -> None:
    """After a restart the table counts the cards inside (resync) and waits for the shoe: dealing blocked."""
    w, alerts = watch(tmp_path, Shoe(problem=ABSENT), Table(Core(session=True)))
    w.tick()
    [alert] = absent(alerts)
    assert alert.severity == "critical"


def test_a_link_lost_during_a_session_is_the_table_fault_not_this_alert(tmp_path: Path) -> None:
    lost = Shoe(problem="link down: silence for more than 3.0 s", ever_connected=True)
    w, alerts = watch(tmp_path, lost, Table(Core(session=True)))
    w.tick()  # the table's LinkDown input is on its way: the fault will say it
    assert absent(alerts) == []
    w, alerts = watch(tmp_path / "fault", lost, Table(Core(session=True, faults={"link_down": object()})))
    w.tick()
    assert absent(alerts) == []


def test_a_shoe_lost_on_a_closed_table_is_said(tmp_path: Path) -> None:
    """The table enters no fault without a session (controller/table/link.py): the watch says it."""
    w, alerts = watch(
        tmp_path, Shoe(problem="link down: unplugged: port closed", ever_connected=True), Table()
    )
    w.tick()
    assert [a.severity for a in absent(alerts)] == ["warning"]


def test_the_alert_a_previous_run_left_open_is_not_raised_again_and_closes(tmp_path: Path) -> None:
    shoe = Shoe(problem=ABSENT)
    w, alerts = watch(tmp_path, shoe, Table())
    w.tick()
    [first] = absent(alerts)
    alerts.journal.close()
    w, alerts = watch(tmp_path, shoe, Table())  # restarted: the book rebuilt from the journal
    w.tick()
    assert [a.alert_id for a in absent(alerts)] == [first.alert_id]
    shoe.connected = True
    w.tick()
    assert absent(alerts) == []
