"""The async shell around the pure core: one input at a time -> core -> ONE journal transaction -> effects.

Order matters (CONTRIBUTING "Flow"): the input and every record and outbox event it caused commit together;
only after COMMIT are shoe commands sent, GPIO written and alerts raised. Recovery loads the newest snapshot
and re-applies the journaled inputs after it with effects suppressed, re-asserts the safe outputs (lid locked,
light on), then feeds a ``restart`` input so the core re-counts the cards before anything goes on.

Its other concerns are objects it holds (in controller/table/): ``outage`` (journal_outage.py: the journal cannot
write, the journal_io fault at once, inputs owed and held), ``feeds`` (input_feeds.py: shoe event pump, ticker,
GPIO buttons and sensors), ``resend`` (shoe_resend.py: shoe events asked for again, in order) and ``alerts``
(alert_sink.py). The shell is a layer of its own above MQTT (pyproject.toml [tool.importlinter]): it answers the
MQTT intake with its refusal (``CommandRejected``) and is given the journal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controller.effects import (
    Alert,
    Event,
    GpioWrite,
    JournalRecord,
    Rejected,
    ShoeCommand,
    StateDocument,
)
from controller.gpio.base import OUTPUT_SAFE_VALUES
from controller.mqtt.commands import CommandRejected
from controller.table import activity, inputs
from controller.table.alert_sink import AlertSink, LogAlerts
from controller.table.core import Step, TableCore
from controller.table.input_feeds import InputFeeds
from controller.table.journal_io import JournalProblem, JournalWriteFailed, classify, is_write_failure
from controller.table.journal_outage import Committed, JournalOutage
from controller.table.messages import Publish, message_of
from controller.table.shoe_resend import ShoeResend
from drivers import events as ev
from drivers.aio import cancel_tasks

if TYPE_CHECKING:  # the journal and the profiles are passed in: named in annotations only
    from controller.journal.store import Journal
    from controller.rules.profiles import Profile

log = logging.getLogger("controller.table.controller")  # the shell's one logger, its name kept (log filters)
# what the journal publishes through the outbox: a tuple (``Event | StateDocument`` in the loop built a union
# each time)
_PUBLISHED = (Event, StateDocument)


class TableController:
    def __init__(
        self,
        journal: Journal,
        shoe: Any | None = None,  # drivers.shoe.ShoeDevice
        *,
        board: Any | None = None,  # controller.gpio.GpioBoard
        alerts: AlertSink | None = None,
        load_profile: Callable[[str], Any] | None = None,
        snapshot_every: int = 100,
        clock: Callable[[], float] = time.time,
        core: TableCore | None = None,
        unjournaled: Callable[[Publish], None] | None = None,
        journal_back: Callable[[], None] | None = None,
    ) -> None:
        if load_profile is None:
            from controller.rules.profiles import load_profile as default_loader

            load_profile = default_loader
        self.journal = journal
        self.shoe = shoe
        self.board = board
        self.alerts = alerts or LogAlerts()
        self.core = core or TableCore(load_profile)
        self.snapshot_every = snapshot_every
        self._clock = clock
        self._lock = asyncio.Lock()
        self._since_snapshot = 0
        self._tasks: list[asyncio.Task[None]] = []
        self.replayed = 0  # inputs re-applied by the last recover()
        self.errors = 0  # inputs that failed inside the core (logged, never fatal)
        # Issue 14 item 3: a failed journal write (journal_outage.py).
        self.outage = JournalOutage(lambda: self.journal.path.parent, self.core, clock, unjournaled)
        self.journal_back = journal_back  # called once the journal writes again (owed alerts, ...)
        self.uncommitted_events = 0  # shoe events whose commit failed: never acknowledged as committed
        self.resend = ShoeResend()  # ... asked for again once the journal writes, and taken in order
        self.feeds = InputFeeds(self, shoe, board, clock)
        self._background: set[asyncio.Task[None]] = set()
        self.recovery_problems: list[str] = []  # a snapshot that could not be restored (start-up)
        self.recovered_until: int | None = None  # the recovery stopped at this record (the verified part)

    @property
    def journal_problem(self) -> JournalProblem | None:
        """Why the journal cannot write now (None: it writes)."""
        return self.outage.problem

    @journal_problem.setter
    def journal_problem(self, problem: JournalProblem | None) -> None:
        self.outage.problem = problem

    @property
    def _deferred(self) -> list[Committed]:
        """Inputs applied whose commit is owed (the journal_io fault's): committed first, in order."""
        return self.outage.deferred

    # ---- life cycle ----
    def recover(self, until_seq: int | None = None, *, before_snapshot: int | None = None) -> int:
        """Snapshot + the inputs journaled after it, effects suppressed. Returns the inputs re-applied.

        ``until_seq``: only the verified part of the journal becomes state (after an integrity fault, issue
        27 §2): a snapshot whose digest record is at or before it, the inputs up to it. ``before_snapshot``:
        an older snapshot than that one (it contradicts the journal's meter records)."""
        after = 0
        limit = until_seq + 1 if until_seq is not None else None
        if before_snapshot is not None:
            limit = min(limit, before_snapshot + 1) if limit is not None else before_snapshot + 1
        fresh = TableCore(_loads_no_profile).snapshot()  # the state of a new table (restored into this core)
        self.core.restore(fresh)
        try:
            snap = self.journal.latest_snapshot(before_seq=limit)
            if snap is not None:
                after, state = snap
                self.core.restore(state)
        except Exception as exc:  # an unreadable or inconsistent snapshot: never a crash (issue 13 §1)
            seq = self._newest_snapshot_seq()
            self.recovery_problems.append(f"snapshot at record {seq} cannot be restored ({exc})")
            log.error("snapshot at record %s cannot be restored (%s): replaying the whole journal", seq, exc)
            self.core.restore(fresh)
            after = 0
        self.recovered_until = until_seq
        count = 0
        for rec in self.journal.records(after_seq=after, kinds=("input",)):
            if until_seq is not None and rec.seq > until_seq:
                break  # not covered by a valid signed checkpoint: never live state
            try:
                self.core.apply(inputs.decode(rec.data["input"]), rec.data["now"])  # a row can lie: refused
            except Exception as exc:  # never journaled normally; a bad record must not stop the table
                self.errors += 1
                log.warning("journal input %d failed on replay: %s", rec.seq, exc)
            count += 1
        self.replayed = count
        self._since_snapshot = count
        return count

    def snapshot_now(self) -> None:
        """A snapshot of the state as it is (after a recovery limited to the verified part of the journal:
        the next start restores it instead of the records it left out)."""
        self._since_snapshot = max(self._since_snapshot, 1)
        self._maybe_snapshot(stopping=True)

    def _newest_snapshot_seq(self) -> int | None:
        with contextlib.suppress(Exception):
            row = self.journal._conn.execute("SELECT MAX(seq) FROM snapshots").fetchone()
            return int(row[0]) if row[0] is not None else None
        return None

    async def start(self, until_seq: int | None = None) -> None:
        self.recover(until_seq)
        resume = getattr(self.shoe, "resume_after", None)
        if resume is not None:  # the shoe sends again every event after the last committed one (protocol §5a)
            resume(*self.core.device.committed)
        self._safe_outputs()
        try:
            await self.submit(inputs.Restart())
        except JournalWriteFailed:  # comes up in the journal_io fault (issue 14 item 3), never a crash
            log.critical("restart not journaled: %s", self.journal_problem)
        if self.board is not None:
            self.feeds.watch_gpio()
        loop = asyncio.get_running_loop()
        if self.shoe is not None:
            self._tasks.append(loop.create_task(self.feeds.pump(), name="table-pump"))
        self._tasks.append(loop.create_task(self.feeds.ticker(), name="table-ticker"))

    def running(self) -> bool:
        """Every background task (event pump, ticker) is still running."""
        return bool(self._tasks) and not any(t.done() for t in self._tasks)

    async def stop(self) -> None:
        self._safe_outputs()  # first: nothing below may keep the lid unlocked
        await cancel_tasks([*self._tasks, *self._background], swallow_errors=True)  # a dead one said why
        self._tasks.clear()
        self._safe_outputs()
        async with self._lock:  # no input between its apply and its commit
            self._maybe_snapshot(stopping=True)

    def _safe_outputs(self) -> None:
        """Lid locked, light on (PT-2001 r.51, r.60): at start-up, on fault and on shutdown."""
        if self.board is not None:
            with contextlib.suppress(Exception):
                self.board.safe_state()
            for name, value in OUTPUT_SAFE_VALUES.items():
                with contextlib.suppress(Exception):
                    self.board.write(name, value)

    # ---- inputs ----
    async def dealer_input(self, action: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Dealer buttons and MQTT dealer commands; raises Rejected (citing the rule) and changes nothing."""
        return await self.submit(inputs.dealer(action, args))

    async def supervisor_action(
        self, user: str, action: str, args: dict[str, Any] | None = None, *, role: str = "supervisor"
    ) -> dict[str, Any]:
        try:
            result = await self.submit(inputs.supervisor(user, action, args, role))
        except Rejected as exc:
            activity.log_supervisor(user, role, action, exc.reason)  # the service log says who did what
            raise
        activity.log_supervisor(user, role, action)
        return result

    async def handle_command(
        self, role: str, user: str, action: str, args: dict[str, Any], request_id: str | None = None
    ) -> dict[str, Any]:
        """For the MQTT command intake: dealer commands vs supervisor/technician actions. ``request_id`` is
        journaled with the input (``request``, ignored by the core) in the same transaction as its effects, so
        a retry after a crash between the commit and the answer is recognised (docs/mqtt.md, idempotency)."""
        request = inputs.Request(role, user, request_id) if request_id else None
        inp: inputs.Input = (
            inputs.DealerInput(action, dict(args), request)
            if role == "dealer"
            else inputs.SupervisorInput(user, action, dict(args), role, request)
        )
        if role == "dealer":
            return await self.submit(inp)
        try:
            result = await self.submit(inp)
        except Rejected as exc:
            activity.log_supervisor(user, role, action, exc.reason)  # the service log says who did what
            raise
        activity.log_supervisor(user, role, action)
        return result

    async def handle_request(self, request: Any) -> dict[str, Any]:
        """MQTT intake handler: a ``CommandRequest`` in, the response out; refusals as ``CommandRejected``."""
        try:
            return await self.handle_command(request.role, request.user, request.action, dict(request.args))
        except Rejected as exc:
            raise CommandRejected(exc.reason) from exc

    async def handle_event(self, event: ev.DeviceEvent) -> None:
        await self.handle_events([event])

    async def handle_events(self, events: list[ev.DeviceEvent], taken: int | None = None) -> bool:
        """Device events in order, committed in ONE journal transaction (a burst costs one fsync, not one
        per card); their effects run after that commit, in order. Every event is published, the retained
        state documents once, as they stand after the burst (an intermediate one would be overwritten in
        the same commit, before anyone could read it: docs/mqtt.md). A bad event is logged, counted and
        skipped, never fatal (CONTRIBUTING); the others still count. Returns True once the events are
        committed, False if the journal could not commit them: then nothing of them happened and they must
        not be acknowledged to the shoe as committed (issue 14 items 1 and 3). ``taken``: the pump's
        ``resend.asked`` when it took the events from the driver (shoe_resend.py: taken in order, never twice)."""
        async with self._lock:
            batch: list[Committed] = []
            first_undo: bytes | None = None
            asked = self.resend.asked if taken is None else taken
            given: list[ev.DeviceEvent] = []
            for event in events:
                if not self.resend.takes(event, asked, self.core.device):
                    continue
                given.append(event)
                inp, now = inputs.DeviceInput(event), self._clock()
                try:
                    step = self.core.apply(inp, now, states=False)
                except Exception:
                    self.errors += 1
                    log.exception("device event %r failed", event)
                    continue
                if first_undo is None:
                    first_undo = self.core.undo
                batch.append((inp, now, step))
            if not batch:
                return True
            assert first_undo is not None
            batch[-1][2].effects.extend(self.core.publish_states())
            try:
                self._commit_or_undo(batch, first_undo)  # on failure nothing of the burst happened
            except JournalWriteFailed as exc:
                self.uncommitted_events += len(events)
                self.resend.commit_failed(given, self.core.device)
                log.error("%d shoe event(s) not committed: %s", len(events), exc.problem.text)
                failed, fault = True, self.outage.take_fault_step()
            else:
                failed, fault = False, None
        if failed:  # none of their effects: they did not happen (only the fault's, if it is new)
            if fault is not None:
                await self._execute_unjournaled(fault)
            return False
        for _, _, step in batch:
            await self._execute(step)
        await self._snapshot_after_publish()
        return True

    async def tick(self) -> None:
        await self.submit(inputs.Tick())

    def deadline(self) -> float | None:
        """When the core wants a tick (the lid's deadline), or None."""
        deadline: float | None = self.core.lid.deadline
        return deadline

    def resend_asked(self) -> int:
        """How many times the shoe was asked again (shoe_resend.py): the pump tags each burst it takes."""
        return self.resend.asked

    def events_committed(self, events: list[ev.DeviceEvent]) -> None:
        """Called only after the events' COMMIT (never after a failed one): where the shoe may be told they
        are safe (issue 14 item 1, ack after commit). Nothing to do while the driver acks on arrival."""

    def view(self) -> dict[str, Any]:
        return self.core.view()

    async def submit(self, inp: inputs.Input) -> dict[str, Any]:
        async with self._lock:
            now = self._clock()
            step = self.core.apply(inp, now)  # Rejected: nothing changed, nothing journaled
            fault: Step | None = None
            failure: JournalWriteFailed | None = None
            try:
                self._commit_or_undo([(inp, now, step)], self.core.undo)
            except JournalWriteFailed as exc:
                fault, failure = self.outage.take_fault_step(), exc
        if failure is not None:
            if fault is not None:
                await self._execute_unjournaled(fault)
            raise failure  # a Rejected: the caller answers it with the reason
        await self._execute(step)
        result = {"ok": True, "state": self.core.state, **step.result}
        await self._snapshot_after_publish()
        return result

    def _commit_or_undo(self, batch: list[Committed], undo: bytes) -> None:
        """Commit the batch (after the inputs whose commit is still owed), or put the core back to ``undo``
        (its state before the batch) and re-raise; a journal write failure as ``JournalWriteFailed``."""
        try:
            self._commit_many([*self._deferred, *batch])
        except BaseException as exc:
            self.core.restore(undo)
            if is_write_failure(exc):
                raise JournalWriteFailed(self.outage.failed(exc)) from exc
            raise
        self._journal_ok()

    async def _snapshot_after_publish(self) -> None:
        """The periodic snapshot, once the loop has written what this commit handed to MQTT: a snapshot is a
        transaction of its own (an fsync), and taken before that write it delayed the card it followed (one
        card in ~70, the latency's p99: docs/performance.md)."""
        if self._since_snapshot < self.snapshot_every or self._deferred:
            return
        await asyncio.sleep(0)  # one loop pass: the MQTT link's flush was scheduled by the commit, before us
        self._maybe_snapshot()  # checks again: another input may have taken it meanwhile

    def _maybe_snapshot(self, *, stopping: bool = False) -> None:
        """Every ``snapshot_every`` inputs, and at an orderly stop (``stopping``) if any input came since the last
        one: the next start replays nothing, and a prune may cut up to the last checkpoint (docs/security.md).
        Never while commits are owed (the core is then ahead of the journal) or the journal cannot write."""
        if stopping:
            if not self._since_snapshot or self._deferred or self.journal_problem is not None:
                return
        elif self._since_snapshot < self.snapshot_every or self._deferred:
            return
        try:
            self.journal.save_snapshot(self.core.snapshot())
        except Exception as exc:  # committed already; the snapshot waits (start-up replays a little more)
            if not is_write_failure(exc):
                raise
            log.error("snapshot not saved: %s", classify(exc, self.journal.path.parent).text)
            return
        self._since_snapshot = 0

    def _commit_many(self, batch: list[Committed]) -> None:
        if not batch:  # a probe: does the journal take a record again?
            with self.journal.transaction() as tx:
                tx.append(
                    "journal_check", {"problem": self.journal_problem.text if self.journal_problem else ""}
                )
            return
        with self.journal.transaction() as tx:
            for inp, now, step in batch:
                tx.append("input", {"input": inputs.encode(inp), "now": now})  # encoded once: here
                for fx in step.effects:
                    if isinstance(fx, JournalRecord):
                        tx.append(fx.kind, fx.data)
                    elif isinstance(fx, _PUBLISHED):
                        msg = message_of(fx)
                        data = msg.data if msg.text is None else None  # the text is spliced as it is
                        tx.publish(msg.topic, msg.event_type, data, retain=msg.retain, data_text=msg.text)
        for _, _, step in batch:
            activity.log_step(step.effects)  # committed: the service log says what happened
        self._since_snapshot += len(batch)

    async def _execute(self, step: Step) -> None:
        """Local outputs first (GPIO, alerts: instant), then the shoe commands in order (awaiting results)."""
        failed: list[inputs.CommandFailed] = []
        local = [fx for fx in step.effects if isinstance(fx, Alert | GpioWrite)]
        remote = [fx for fx in step.effects if isinstance(fx, ShoeCommand)]
        for fx in local + remote:
            if isinstance(fx, Alert):
                try:
                    self.alerts.raise_(fx.kind, fx.severity, fx.reason, fx.details)
                except Exception:
                    log.exception("alert sink failed for %s", fx.kind)
            elif isinstance(fx, GpioWrite) and self.board is not None:
                try:
                    self.board.write(fx.name, fx.value)
                except Exception as exc:
                    log.warning("GPIO %s=%s failed: %s", fx.name, fx.value, exc)
            elif isinstance(fx, ShoeCommand) and self.shoe is not None:
                name = type(fx.command).__name__
                try:
                    result = await self.shoe.command(fx.command)
                except Exception as exc:  # LinkError: link down, no result
                    failed.append(inputs.CommandFailed(name, str(exc), link=True))
                    continue
                if not result.ok:
                    failed.append(inputs.CommandFailed(name, result.text))
        for inp in failed:
            with contextlib.suppress(Rejected):  # incl. JournalWriteFailed: the fault is raised already
                await self.submit(inp)

    # ---- while the journal cannot write (journal_outage.py) ----
    async def submit_or_hold(self, inp: inputs.Input) -> dict[str, Any] | None:
        """``submit`` for sensor inputs nobody can send again: if the journal cannot take it, it is held and
        submitted when the journal writes again (a lid switch opened during a disk fault is not forgotten)."""
        try:
            return await self.submit(inp)
        except JournalWriteFailed:
            self.outage.hold(inp)
            return None

    async def _submit_held(self) -> None:
        held = self.outage.held
        while held and self.journal_problem is None:
            inp = held.pop(0)
            try:
                await self.submit(inp)
            except JournalWriteFailed:
                held.insert(0, inp)
                return
            except Rejected as exc:
                log.info("held input %s refused: %s", inp, exc.reason)

    async def journal_failed_elsewhere(self, exc: BaseException) -> None:
        """Another part's journal write failed (an alert, a command's nonce, the outbox's deletes): the same
        fault, at once."""
        async with self._lock:
            if "journal_io" in self.core.faults and self.journal_problem is not None:
                return
            self.outage.failed(exc)
            step = self.outage.take_fault_step()
        if step is not None:
            await self._execute_unjournaled(step)

    def _journal_ok(self) -> None:
        if not self.outage.committed():
            return
        self.resend.ask_again(self.shoe)  # before anything else can take a later shoe event (shoe_resend.py)
        if self.journal_back is not None:
            try:
                self.journal_back()
            except Exception as exc:  # the service's health loop tries again
                log.error("after the journal came back: %s", exc)
        if self.outage.held:
            with contextlib.suppress(RuntimeError):  # no running loop: recovery, nothing held then
                task = asyncio.get_running_loop().create_task(self._submit_held(), name="held-inputs")
                self._background.add(task)  # a strong reference until it is done
                task.add_done_callback(self._background.discard)

    async def _execute_unjournaled(self, step: Step) -> None:
        """The fault's effects without the journal: outputs first, the messages published directly (marked
        as not journaled; the journal gets them once it writes again), then the shoe commands."""
        self._safe_outputs()
        self.outage.publish_unjournaled(step)
        await self._execute(step)

    async def retry_journal(self) -> bool:
        """Commit what is owed (the fault's input) if the journal writes again; True if it did just now."""
        if self.journal_problem is None and not self._deferred:
            return False
        async with self._lock:
            try:
                self._commit_many(list(self._deferred))
            except Exception as exc:
                if not is_write_failure(exc):
                    raise
                self.outage.still_failing(exc)
                return False
            self._journal_ok()
        return True


def _loads_no_profile(name: str) -> Profile:
    """The loader of a core built only for the state of a new table: it never loads a profile."""
    raise LookupError(f"profile {name!r}: this core only gives the state of a new table")
