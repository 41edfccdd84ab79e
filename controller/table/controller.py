"""The async shell around the pure core: one input at a time -> core -> ONE journal transaction -> effects.

Order matters (CONTRIBUTING "Flow"): the input and every record and outbox event it caused commit together;
only after COMMIT are shoe commands sent, GPIO written and alerts raised. Recovery loads the newest snapshot
and re-applies the journaled inputs after it with effects suppressed, re-asserts the safe outputs (lid locked,
light on), then feeds a ``restart`` input so the core re-counts the cards before anything goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from controller.journal.store import Journal
from controller.table import inputs
from controller.table.core import Step, TableCore
from controller.table.effects import Alert, GpioWrite, JournalRecord, Publish, Rejected, ShoeCommand
from drivers import events as ev

log = logging.getLogger(__name__)

# GPIO buttons -> dealer actions: the same interface as the MQTT dealer commands.
BUTTON_ACTIONS = {
    "button_no_more_bets": "no_more_bets",
    "button_hit": "hit",
    "button_stand": "stand",
    "button_double": "double",
    "button_split": "split",
    "button_surrender": "surrender",
    "button_next_round": "next_round",
}


class AlertSink(Protocol):
    def raise_(self, kind: str, severity: str, reason: str, details: dict[str, Any]) -> None: ...


class LogAlerts:
    """Until the AlertManager is wired: log alerts and keep them for inspection."""

    def __init__(self) -> None:
        self.raised: list[tuple[str, str, str, dict[str, Any]]] = []

    def raise_(self, kind: str, severity: str, reason: str, details: dict[str, Any]) -> None:
        self.raised.append((kind, severity, reason, details))
        log.warning("alert %s [%s]: %s", kind, severity, reason)


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
    ) -> None:
        if load_profile is None:
            from controller.rules.profiles import load_profile as load_profile
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

    # ---- life cycle ----
    def recover(self) -> int:
        """Snapshot + the inputs journaled after it, effects suppressed. Returns the inputs re-applied."""
        snap = self.journal.latest_snapshot()
        after = 0
        if snap is not None:
            after, state = snap
            self.core.restore(state)
        count = 0
        for rec in self.journal.records(after_seq=after, kinds=("input",)):
            try:
                self.core.apply(rec.data["input"], rec.data["now"])
            except Exception as exc:  # never journaled normally; a bad record must not stop the table
                self.errors += 1
                log.warning("journal input %d failed on replay: %s", rec.seq, exc)
            count += 1
        self.replayed = count
        self._since_snapshot = count
        return count

    async def start(self) -> None:
        self.recover()
        resume = getattr(self.shoe, "resume_after", None)
        if resume is not None:  # the shoe sends again every event after the last committed one (protocol §5a)
            resume(int(self.core.device.get("boot_id", 0)), int(self.core.device.get("event_no", 0)))
        self._safe_outputs()
        await self.submit({"type": "restart"})
        if self.board is not None:
            self._watch_gpio()
        if self.shoe is not None:
            self._tasks.append(asyncio.get_running_loop().create_task(self._pump(), name="table-pump"))
        self._tasks.append(asyncio.get_running_loop().create_task(self._ticker(), name="table-ticker"))

    def running(self) -> bool:
        """Every background task (event pump, ticker) is still running."""
        return bool(self._tasks) and not any(t.done() for t in self._tasks)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._safe_outputs()

    def _safe_outputs(self) -> None:
        """Lid locked, light on (PT-2001 r.51, r.60): at start-up, on fault and on shutdown."""
        if self.board is not None:
            with contextlib.suppress(Exception):
                self.board.safe_state()
            for name, value in (("lid_lock", True), ("warning_light", True)):
                with contextlib.suppress(Exception):
                    self.board.write(name, value)

    # ---- inputs ----
    async def dealer_input(self, action: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Dealer buttons and MQTT dealer commands; raises Rejected (citing the rule) and changes nothing."""
        return await self.submit(inputs.dealer(action, args))

    async def supervisor_action(
        self, user: str, action: str, args: dict[str, Any] | None = None, *, role: str = "supervisor"
    ) -> dict[str, Any]:
        return await self.submit(inputs.supervisor(user, action, args, role))

    async def handle_command(self, role: str, user: str, action: str, args: dict[str, Any]) -> dict[str, Any]:
        """For the MQTT command intake: dealer commands vs supervisor/technician actions."""
        if role == "dealer":
            return await self.dealer_input(action, args)
        return await self.supervisor_action(user, action, args, role=role)

    async def handle_request(self, request: Any) -> dict[str, Any]:
        """MQTT intake handler: a ``CommandRequest`` in, the response out; refusals as ``CommandRejected``."""
        from controller.mqtt.commands import CommandRejected

        try:
            return await self.handle_command(request.role, request.user, request.action, dict(request.args))
        except Rejected as exc:
            raise CommandRejected(exc.reason) from exc

    async def handle_event(self, event: ev.DeviceEvent) -> None:
        await self.handle_events([event])

    async def handle_events(self, events: list[ev.DeviceEvent]) -> None:
        """Device events in order, committed in ONE journal transaction (a burst costs one fsync, not one
        per card); their effects run after that commit, in order. Every event is published, the retained
        state documents once, as they stand after the burst (an intermediate one would be overwritten in
        the same commit, before anyone could read it: docs/mqtt.md). A bad event is logged, counted and
        skipped, never fatal (CONTRIBUTING); the others still count."""
        async with self._lock:
            batch: list[tuple[dict[str, Any], float, Step]] = []
            first_undo: bytes | None = None
            for event in events:
                inp, now = inputs.encode_event(event), self._clock()
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
                return
            assert first_undo is not None
            batch[-1][2].effects.extend(self.core.publish_states())
            self._commit_or_undo(batch, first_undo)  # on failure nothing of the burst happened
        for _, _, step in batch:
            await self._execute(step)

    async def tick(self) -> None:
        await self.submit({"type": "tick"})

    def view(self) -> dict[str, Any]:
        return self.core.view()

    async def submit(self, inp: dict[str, Any]) -> dict[str, Any]:
        async with self._lock:
            now = self._clock()
            step = self.core.apply(inp, now)  # Rejected: nothing changed, nothing journaled
            self._commit_or_undo([(inp, now, step)], self.core.undo)
        await self._execute(step)
        return {"ok": True, "state": self.core.state, **step.result}

    def _commit_or_undo(self, batch: list[tuple[dict[str, Any], float, Step]], undo: bytes) -> None:
        """Commit the batch, or put the core back to ``undo`` (its state before the batch) and re-raise."""
        try:
            self._commit_many(batch)
        except BaseException:
            self.core.restore(undo)
            raise

    def _commit_many(self, batch: list[tuple[dict[str, Any], float, Step]]) -> None:
        with self.journal.transaction() as tx:
            for inp, now, step in batch:
                tx.append("input", {"input": inp, "now": now})
                for fx in step.effects:
                    if isinstance(fx, JournalRecord):
                        tx.append(fx.kind, fx.data)
                    elif isinstance(fx, Publish):
                        data = fx.data if fx.text is None else None  # the text is spliced as it is
                        tx.publish(fx.topic, fx.event_type, data, retain=fx.retain, data_text=fx.text)
        self._since_snapshot += len(batch)
        if self._since_snapshot >= self.snapshot_every:
            self.journal.save_snapshot(self.core.snapshot())
            self._since_snapshot = 0

    async def _execute(self, step: Step) -> None:
        """Local outputs first (GPIO, alerts: instant), then the shoe commands in order (awaiting results)."""
        failed: list[dict[str, Any]] = []
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
                    failed.append({"type": "command_failed", "command": name, "text": str(exc), "link": True})
                    continue
                if not result.ok:
                    failed.append({"type": "command_failed", "command": name, "text": result.text})
        for inp in failed:
            with contextlib.suppress(Rejected):
                await self.submit(inp)

    # ---- background ----
    async def _pump(self, burst: int = 64) -> None:
        async for event in self.shoe.events():
            drain = getattr(self.shoe, "drain_events", None)
            more = drain(burst - 1) if drain is not None else []
            await self.handle_events([event, *more])

    async def _ticker(self, period: float = 0.25) -> None:
        """Ticks are journaled only when a deadline is due, so an idle table writes nothing."""
        while True:
            await asyncio.sleep(period)
            deadline = self.core.lid.get("deadline")
            if deadline is not None and self._clock() >= deadline:
                try:
                    await self.tick()
                except Exception:
                    log.exception("tick failed")

    def _watch_gpio(self) -> None:
        loop = asyncio.get_running_loop()

        def on_edge(name: str, value: bool) -> None:  # may run on another thread
            loop.call_soon_threadsafe(lambda: loop.create_task(self._gpio_edge(name, value)))

        for name in (*BUTTON_ACTIONS, "lid_switch"):
            with contextlib.suppress(Exception):
                self.board.on_edge(name, on_edge)

    async def _gpio_edge(self, name: str, value: bool) -> None:
        try:
            if name in BUTTON_ACTIONS:
                if value:
                    await self.dealer_input(BUTTON_ACTIONS[name], {})
            else:
                await self.submit({"type": "gpio", "name": name, "value": value})
        except Rejected as exc:
            log.info("button %s rejected: %s", name, exc.reason)
        except Exception:
            log.exception("GPIO edge %s failed", name)
