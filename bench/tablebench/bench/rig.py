"""Start and stop the parts a bench file names, and give the bench its handles on them.

Emulated parts come from `bench/tablebench/stack.py` (mosquitto, the shoe and display emulators on ptys, the real
`tablectl run` process with a generated config). A real part is used where the bench file points at one: an
external broker, a serial shoe or display, the Pi's GPIO. The controller is always the real service process,
so the bench can kill -9 it and start it again (`kill_controller`, `start_controller`).
"""

from __future__ import annotations

import asyncio
import contextlib
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tablebench import gpio_server
from tablebench.bench.config import BenchConfig
from tablebench.bench.journal_disk import JournalDisk
from tablebench.bench.journal_probe import last_committed_event_id
from tablebench.bench.recorder import BenchClient
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import DEMO_PINS, Stack, StackOptions

SUPERVISOR = ("alice", DEMO_PINS["alice"])  # demo users, enrolled by the stack (bench/tablebench/stack.py)
TECHNICIAN = ("tom", DEMO_PINS["tom"])


class NeedsEmulator(RuntimeError):
    """The scenario scripts the shoe or the GPIO board; this bench has the real part (the test skips)."""


class ControllerDied(RuntimeError):
    """The service process exited when it should be running (a crash on start-up or recovery)."""


class BenchStack(Stack):
    """A Stack that uses the real parts a bench file names instead of emulating them."""

    def __init__(self, workdir: Path, options: StackOptions, bench: BenchConfig) -> None:
        super().__init__(workdir, options)
        self.bench = bench
        if bench.users_file:
            with open(bench.users_file, "rb") as fh:
                self.users.update(tomllib.load(fh).get("users", {}))

    def _start_shoe(self) -> None:
        if self.bench.emulated_shoe:
            super()._start_shoe()
        else:
            self.shoe_device, self.shoe_control = self.bench.shoe_port, ""

    def _start_display(self) -> None:
        if self.bench.display == "emulated":
            super()._start_display()
        else:
            self.display_device = self.bench.display_port

    def start_controller(self) -> None:
        if self.bench.fake_gpio:
            super().start_controller()
            return
        real = self.gpio_socket
        self.gpio_socket = ""
        try:  # the real board has no control socket; Stack adds --gpio-control only with a path
            super().start_controller()
        finally:
            self.gpio_socket = real


class Rig:
    """One table on the bench: the stack, a dealer, a supervisor, a recording monitor, the shoe's control."""

    def __init__(
        self,
        bench: BenchConfig,
        workdir: str | Path,
        *,
        scenario: dict[str, Any] | None = None,
        profile: str | None = None,
    ) -> None:
        self.bench = bench
        self.workdir = Path(workdir)
        sc = dict(scenario if scenario is not None else bench.scenario)
        if not bench.emulated_shoe:
            sc = {"kind": bench.shuffler}
        jackpot = bench.display != "none"
        opts = StackOptions(
            profile=profile or bench.profile,
            table_id=bench.table_id,
            site=bench.site,
            scenario=sc,
            jackpot=jackpot,
            min_bet=bench.min_bet,
            max_bet=bench.max_bet,
            broker=(bench.broker_host, bench.broker_port) if bench.broker == "external" else None,
            config_overrides={} if bench.fake_gpio else {"gpio": {"backend": "rpi"}},
        )
        self.stack = BenchStack(self.workdir, opts, bench)
        # The observer: its own monitor account on a persistent MQTT 3.1.1 session, used for nothing but
        # recording; the reconciliation checks every event id it received against the journal's.
        self.observer_user = f"monitor-{bench.table_id}"  # a monitor account for this table only (read-only)
        self.stack.users.setdefault(self.observer_user, f"demo-{self.observer_user}")
        self.scenario = sc
        self.dealer: BenchClient
        self.supervisor: BenchClient
        self.monitor: BenchClient
        self.shoe: ControlClient | None = None
        self.initial_event_id = 0  # events committed before this run (a kept journal)
        self.journal_disk: JournalDisk | None = None  # the state directory's own disk, if the run mounted one

    @property
    def shuffler(self) -> str:
        return str(self.scenario.get("kind", "continuous"))

    @property
    def journal_path(self) -> Path:
        return self.workdir / "state" / "journal.db"

    def _client(self, user: str, *, persistent: bool = False) -> BenchClient:
        s = self.stack
        return BenchClient(
            s.host, s.port, username=user, password=s.users[user], prefix=s.prefix, persistent=persistent,
            key_dir=s.key_dir,
        )  # fmt: skip

    async def start(self) -> Rig:
        """Broker first, then the recording consumer (so it sees event 1), then shoe, display, controller. A
        start that fails or is cancelled (SIGTERM of a soak) stops whatever it had started before it ends."""
        try:
            return await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> Rig:
        s = self.stack
        await _in_thread(s.start_broker)
        self.monitor = self._client("monitor", persistent=True)  # the bench's view (decisions, barrier)
        self.observer = self._client(
            self.observer_user, persistent=True
        )  # the consumer whose view is reconciled
        self.dealer = self._client("dealer")
        self.supervisor = self._client("supervisor1")
        for c in (self.monitor, self.observer, self.dealer, self.supervisor):
            await c.connect(20)

        # A journal kept from an earlier run (a real bench): its events were delivered before we subscribed.
        if self.journal_path.exists():
            self.initial_event_id = last_committed_event_id(str(self.journal_path))
            self.monitor.received.contiguous = self.initial_event_id
            self.observer.received.contiguous = self.initial_event_id

        def rest() -> None:
            s.start_parts()
            s.start_controller()

        await _in_thread(rest)
        if self.stack.shoe_control:
            self.shoe = await ControlClient.connect(self.stack.shoe_control)
        await self.monitor.wait_for(lambda v: v.status == "online" and "table" in v.states, 30)
        return self

    async def stop(self) -> None:
        """The processes first (service, emulators, broker), then the clients, each on its own: a client that
        cannot close (its broker gone) never keeps the processes running."""
        await _in_thread(self.stack.stop)
        if self.shoe is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.shoe.close(), 5)
        for c in (getattr(self, n, None) for n in ("dealer", "supervisor", "monitor", "observer")):
            if c is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(c.close(), 5)

    async def __aenter__(self) -> Rig:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- handles the scenarios need ----
    def ctl(self) -> ControlClient:
        """The emulator's control channel; NeedsEmulator on a real shoe."""
        if self.shoe is None:
            raise NeedsEmulator(f"bench {self.bench.name!r} has a real shoe: no scripted cards or faults")
        return self.shoe

    async def gpio(self, op: str, **args: Any) -> dict[str, Any]:
        """A request to the service's fake GPIO board (press a button, read the lid lock)."""
        if not self.bench.fake_gpio:
            raise NeedsEmulator(f"bench {self.bench.name!r} has the real GPIO board")
        reply = await gpio_server.call(self.stack.gpio_socket, op, **args)
        if not reply.get("ok"):
            raise RuntimeError(f"gpio {op}: {reply.get('error')}")
        return reply

    async def sv(self, action: str, **args: Any) -> dict[str, Any]:
        user, pin = SUPERVISOR
        return await self.supervisor.supervisor(user, pin, action, **args)

    async def kill_controller(self) -> None:
        """kill -9 the service (power loss) and start it again; wait until it is back online."""
        self.stack.kill_controller()
        await self.restart_killed_controller()

    async def restart_killed_controller(self) -> None:
        """After a kill -9 of the service: its last will, then start it again and wait until it is online."""
        await self.monitor.wait_for(lambda v: v.status == "offline", 30)  # the broker's last will
        await asyncio.to_thread(self.stack.start_controller)
        await self.wait_online()

    async def _broker_back_after_crash(self) -> None:
        """The broker was SIGKILLed: every client notices, the broker starts again (what it saved is what it
        has: nothing since its last autosave), every client reconnects."""
        assert self.stack.broker is not None
        clients = (self.monitor, self.observer, self.dealer, self.supervisor)
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while any(c.connected for c in clients) and loop.time() < end:
            await asyncio.sleep(0.02)
        await asyncio.to_thread(self.stack.broker._launch)
        for c in clients:
            await c.mqtt.wait_connected(30)

    async def broker_crash(self) -> None:
        """SIGKILL of the broker (no clean stop) and a start again; wait until the service is online."""
        broker = self.stack.broker
        if broker is None:
            raise NeedsEmulator("the broker is external: the bench does not kill it")
        self.monitor.view.status = "unknown"  # a crash publishes no last will: wait for a fresh "online"
        await asyncio.to_thread(broker.kill)
        await self._broker_back_after_crash()
        await self.wait_online()

    async def power_loss(self) -> None:
        """Controller and broker killed together (the Pi loses power), then both started again."""
        broker = self.stack.broker
        if broker is None:
            raise NeedsEmulator("the broker is external: the bench does not kill it")
        self.monitor.view.status = "unknown"
        await asyncio.to_thread(self.stack.kill_controller)
        await asyncio.to_thread(broker.kill)
        await self._broker_back_after_crash()
        await asyncio.to_thread(self.stack.start_controller)
        await self.wait_online()

    async def wait_online(self, timeout: float = 30.0) -> None:
        """Wait for the service's ``online``; a service that died on start-up fails with its log tail."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while self.monitor.view.status != "online":
            proc = self.stack.controller_proc
            if proc is not None and proc.poll() is not None:
                raise ControllerDied(
                    f"tablectl run exited with {proc.returncode}:\n{self.stack.controller_log(12)}"
                )
            if loop.time() > end:
                raise TimeoutError(f"the service is not online after {timeout} s")
            await asyncio.sleep(0.05)

    async def broker_down(self) -> None:
        """Stop the broker (clean stop: persistent sessions and their queued messages are saved)."""
        broker = self.stack.broker
        if broker is None:
            raise NeedsEmulator("the broker is external: the bench does not stop it")
        await asyncio.to_thread(broker.stop)

    async def broker_up(self) -> None:
        """Start the broker again on the same port; wait until every client is reconnected."""
        assert self.stack.broker is not None
        await asyncio.to_thread(self.stack.broker._launch)
        for c in (self.monitor, self.observer, self.dealer, self.supervisor):
            await c.mqtt.wait_connected(30)
        await self.monitor.wait_for(lambda v: v.status == "online", 30)

    async def broker_outage(self, seconds: float) -> None:
        """The broker stopped for ``seconds``, then started again."""
        await self.broker_down()
        await asyncio.sleep(seconds)
        await self.broker_up()


async def _in_thread(fn: Callable[[], object]) -> None:
    """``fn`` in a thread; cancelled, it still waits for ``fn`` to end (a thread cannot be stopped), so that
    every process ``fn`` started is known to the stack and stopped with it."""
    work = asyncio.ensure_future(asyncio.to_thread(fn))
    try:
        await asyncio.shield(work)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await work
        raise
