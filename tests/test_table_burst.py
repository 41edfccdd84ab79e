"""A burst of device events is committed in one transaction, with exactly the state one-by-one would give."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from controller.effects import StateDocument
from controller.journal import Journal
from controller.shell.controller import TableController
from controller.table import inputs
from drivers import events as ev
from tablebench.fake_shoe import FakeShoe


async def _open_table(tc: TableController) -> None:
    total = 312
    await tc.supervisor_action("ana", "open_table", {"profile": "pt-2001", "shuffler": "continuous"})
    for e in (
        ev.LidChanged(ev.LidState.OPEN),
        ev.DiscardInserted(total // 2),
        ev.DiscardInserted(total - total // 2),
        ev.LidChanged(ev.LidState.CLOSED),
        ev.ShuffleStarted(),
        ev.ShuffleFinished(total),
    ):
        await tc.handle_event(e)
    for seat in (1, 2, 3):
        await tc.dealer_input("place_bet", {"seat": seat, "amount": 1000})
    await tc.dealer_input("no_more_bets")


def clock() -> float:
    """One fixed time for both tables: round ids carry the time, and the two must be comparable whatever
    second each one's round started in (a loaded machine crossed one)."""
    return 1_790_000_000.0


BURST = ["2C", "5S", "6D", "9H", "KC", "4H", "TS", "8D"]  # burn, then the initial deal of 3 seats + dealer


async def test_burst_commits_once_and_equals_one_by_one(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "burst.db")
    tc = TableController(journal, None, clock=clock)
    await _open_table(tc)
    commits: list[int] = []
    journal.add_commit_listener(lambda tx: commits.append(len(tx.records)))
    cards = [ev.CardOut(c[0], c[1], i + 1) for i, c in enumerate(BURST)]
    await tc.handle_events(cards)
    assert len(commits) == 1  # one transaction (one fsync) for the whole burst

    single = TableController(Journal(tmp_path / "single.db"), None, clock=clock)
    await _open_table(single)
    for card in cards:
        await single.handle_event(card)
    assert tc.core.snapshot() == single.core.snapshot()
    # and recovery from the burst's journal gives the same state again
    revived = TableController(Journal(tmp_path / "burst.db"), None, clock=clock)
    revived.recover()
    assert revived.core.snapshot() == tc.core.snapshot()


async def test_burst_keeps_every_event_and_only_the_last_state_document_per_topic(tmp_path: Path) -> None:
    """A burst publishes every card event, but a state document superseded within the same commit is left
    out: the retained document after the burst is exactly the one the one-by-one table ends with."""
    cards = [ev.CardOut(c[0], c[1], i + 1) for i, c in enumerate(BURST)]
    burst = TableController(Journal(tmp_path / "burst.db"), None, clock=clock)
    await _open_table(burst)
    before = burst.journal.last_event_id
    await burst.handle_events(cards)
    single = TableController(Journal(tmp_path / "single.db"), None, clock=clock)
    await _open_table(single)
    for card in cards:
        await single.handle_event(card)

    def published(j: Journal, after: int) -> list[tuple[str, dict]]:
        rows = [r for r in j.outbox_pending(after, 10_000)]
        return [(r.topic, json.loads(r.payload)["data"]) for r in rows]

    got = published(burst.journal, before)
    want = published(single.journal, before)
    assert [d for t, d in got if t == "events/card"] == [d for t, d in want if t == "events/card"]
    assert len([d for t, d in got if t == "events/card"]) == len(BURST)
    state_topics = [t for t, _ in got if t.startswith("state/")]
    assert "state/round" in state_topics and len(state_topics) == len(set(state_topics))  # once each
    assert len([t for t, _ in want if t == "state/round"]) > 1  # one by one: one per card
    retained = {t: json.loads(p)["data"] for t, p in burst.journal.retained_state().items()}
    assert retained == {t: json.loads(p)["data"] for t, p in single.journal.retained_state().items()}


async def test_pump_drains_queued_events_into_bursts(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    shoe = FakeShoe()
    tc = TableController(journal, shoe)
    await _open_table(tc)
    commits: list[int] = []
    journal.add_commit_listener(lambda tx: commits.append(1))
    shoe.push(*(ev.CardOut(c[0], c[1], i + 1) for i, c in enumerate(BURST)))
    await tc.start()
    try:
        for _ in range(200):
            if tc.core.shoe.last_seq == len(BURST):
                break
            await asyncio.sleep(0.01)
        assert tc.core.shoe.last_seq == len(BURST)
        assert len(commits) < len(BURST)  # queued cards went in together
    finally:
        await tc.stop()


async def test_documents_left_out_of_a_step_come_with_publish_states(tmp_path: Path) -> None:
    """``apply(states=False)`` leaves only the retained documents out (every event stays, in order), and
    ``publish_states()`` then gives exactly the documents the same input would have published."""
    deferred = TableController(Journal(tmp_path / "a.db"), None, clock=clock)
    direct = TableController(Journal(tmp_path / "b.db"), None, clock=clock)
    for tc in (deferred, direct):
        await _open_table(tc)
    card = inputs.DeviceInput(ev.CardOut("2", "C", 1))
    late = deferred.core.apply(card, clock(), states=False)
    now = direct.core.apply(card, clock())
    assert [fx for fx in late.effects if isinstance(fx, StateDocument)] == []
    assert late.effects == [fx for fx in now.effects if not isinstance(fx, StateDocument)]
    docs = deferred.core.publish_states()
    assert docs and docs == [fx for fx in now.effects if isinstance(fx, StateDocument)]
    assert deferred.core.publish_states() == []  # published once: nothing changed since
    assert deferred.core.snapshot() == direct.core.snapshot()


async def test_the_periodic_snapshot_waits_until_the_loop_has_written_the_commits_messages(
    tmp_path: Path,
) -> None:
    """A snapshot is a transaction of its own (an fsync): taken before the loop's next pass, it held back the
    MQTT write of the card it followed (the MQTT link flushes what a commit handed it with ``call_soon``), one
    card in ~70 at the default interval: the latency's p99 (issue 31, docs/performance.md)."""
    journal = Journal(tmp_path / "j.db")
    tc = TableController(journal, None, snapshot_every=1, clock=clock)
    loop = asyncio.get_running_loop()
    order: list[str] = []

    def on_commit(tx: object) -> None:  # as MqttLink: the write of what the commit handed over, next pass
        if any(r.kind == "snapshot" for r in tx.records):  # type: ignore[attr-defined]
            order.append("snapshot")
        else:
            loop.call_soon(order.append, "written")

    journal.add_commit_listener(on_commit)
    await tc.handle_event(ev.LinkUp())
    assert order[:2] == ["written", "snapshot"]
    assert journal.latest_snapshot() is not None  # still taken before the input's call returned
