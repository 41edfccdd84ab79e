"""Faults the bench injects into a running table, each with the recovery a floor would do.

Every function leaves the table where it found it (same state, dealing possible again), so a soak can
inject them at random moments and carry on playing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial

from controller.client import CommandFailed, TableView
from tablebench.bench.driver import Dealer

Fault = Callable[[Dealer], Awaitable[None]]


async def _retry_sv(d: Dealer, action: str, attempts: int = 100) -> None:
    """A supervisor action the table may refuse until the device reported back (e.g. the jam cleared)."""
    for i in range(attempts):
        try:
            await d.rig.sv(action)
            return
        except CommandFailed:
            if i == attempts - 1:
                raise
            await d.barrier()
            await asyncio.sleep(0.05)


async def jam(d: Dealer, location: str = "output") -> None:
    """PT-2001 r.51: light on, dealing blocked; the inspector unlocks, the jam is cleared, dealing resumes."""
    before = d.state
    ctl = d.rig.ctl()
    await ctl.jam(location)
    await d.wait_state("jammed")
    await d.rig.sv("unlock_lid")
    for _ in range(200):
        if not (await ctl.state())["locked"]:
            break
        await asyncio.sleep(0.02)
    await ctl.clear_jam()
    await _retry_sv(d, "clear_jam")
    await d.wait_state(before)
    await d.barrier()


async def forced_lid(d: Dealer) -> None:
    """PT-2001 r.60: a forced lid is a tamper alarm; the lid is closed and a supervisor locks it again."""
    before = d.state
    ctl = d.rig.ctl()
    await ctl.force_lid()
    await d.wait_state("tamper")
    await ctl.close_lid()
    await d.wait_lid("closed", "locked")
    await _retry_sv(d, "lock_lid")
    await d.wait_state(before)
    await d.barrier()


async def kill_controller(d: Dealer) -> None:
    """kill -9 (power loss) and restart: the service recovers from its journal."""
    await d.rig.kill_controller()
    await d.barrier()


async def broker_outage(d: Dealer, seconds: float = 1.0) -> None:
    await d.rig.broker_outage(seconds)
    await d.barrier()


async def unplug(d: Dealer, seconds: float = 0.5) -> None:
    """The shoe's USB cable out and back: the link goes down, comes back, nothing is lost. Safety first (product
    guide): the fault stays raised, light on and lid locked, until the inspector ``clear_link``s it (as a jam,
    PT-2001 r.51); with no session (closed, failed deck check) no fault is raised and there is nothing to clear."""
    raised = d.state not in ("closed", "deck_check_failed")
    d.floor_clears_link = False  # this fault clears it itself, below
    try:
        await _unplug_and_clear(d, seconds, raised)
    finally:
        d.floor_clears_link = True


async def _unplug_and_clear(d: Dealer, seconds: float, raised: bool) -> None:
    ctl = d.rig.ctl()
    await ctl.unplug(seconds)
    await asyncio.sleep(seconds)
    for _ in range(500):
        st = await ctl.state()
        if st["host_present"] and not st["unplugged"]:
            break
        await asyncio.sleep(0.02)
    if raised:
        await d.wait_state("link_down")  # it stays there until cleared: no race
        await _retry_sv(d, "clear_link")  # refused ("still down") until the controller has seen LinkUp
    await d.until(
        lambda v: (
            v.states.get("shoe", {}).get("linked") is True
            and v.states.get("table", {}).get("state") not in ("link_down", "resync")
        ),
        "shoe linked again and the table resumed",
    )
    await d.barrier()


async def lose_acks(d: Dealer) -> None:
    """The next acks from the host are lost: the shoe retransmits, the host must drop the duplicates."""
    await d.rig.ctl().lose_acks(2)


async def unreadable(d: Dealer) -> None:
    """The next card cannot be read (PT-2001 r.51): the play loop has the inspector enter it."""
    await d.rig.ctl().unreadable(damaged=True)


async def noisy_line(d: Dealer) -> None:
    """A bit-error rate of 1e-3 on the line for the rest of the round (CRC + retransmission)."""
    await d.rig.ctl().set_error_rate(bit_error_rate=1e-3)


async def quiet_line(d: Dealer) -> None:
    await d.rig.ctl().set_error_rate(bit_error_rate=0.0, byte_error_rate=0.0, drop_rate=0.0)


async def kill_before_commit(d: Dealer) -> None:
    """kill -9 of the service between a card's arrival (acked to the shoe) and its commit, at the next card
    drawn (Dealer.draw): the shoe sends it again after the restart (docs/protocol.md §5a)."""
    d.kill_on_next_card = True


async def broker_kill(d: Dealer) -> None:
    """SIGKILL of the broker and a start again: what it had not saved is gone (sessions, queued messages)."""
    await d.rig.broker_crash()
    await d.write_off_lost()
    await d.barrier()


async def power_loss(d: Dealer) -> None:
    """The Pi loses power: the service and the broker killed together, then both started again."""
    await d.rig.power_loss()
    await d.write_off_lost()
    await d.barrier()


async def sustained_noise(d: Dealer) -> None:
    """A 3e-3 bit-error rate both ways for the rest of the round (issue 14 item 4: the line must not stall)."""
    await d.rig.ctl().set_error_rate(bit_error_rate=3e-3)


def _in_journal_io(v: TableView) -> bool:
    table = v.states.get("table", {})
    return "journal_io" in (table.get("faults") or ())


async def _draw_on_failed_disk(d: Dealer, n: int, *, kind: str) -> int:
    """The journal's disk fails (full or read-only) and the dealer draws: the card cannot be committed. The
    service must raise the journal_io fault at once (lid locked, light on, dealing refused, a critical alert)
    and keep answering; the floor mends the disk and a supervisor clears the fault; the card, which the shoe
    keeps until it is committed (docs/protocol.md §5a), is journaled in its round (Dealer.draw waits for it)."""
    rig, ctl = d.rig, d.rig.ctl()
    disk = rig.journal_disk
    if disk is None:  # no disk of its own (not root): the soak left these kinds out
        return await ctl.draw(n)
    words = {"full": "journal disk full", "read_only": "journal disk read-only"}[kind]
    if kind == "full":
        await asyncio.to_thread(disk.fill, rig.journal_path)
    else:
        await asyncio.to_thread(disk.fail)
    try:
        drawn = await ctl.draw(n)
        d.journal_disk_faults[kind] += 1
        await d.until(_in_journal_io, f"the journal_io fault ({words})")
        await d.until(
            lambda v: any(
                a.get("kind") == "journal_io"
                and a.get("severity") == "critical"
                and words in a.get("reason", "")
                for a in v.alerts_open
            ),
            f"a critical journal_io alert naming '{words}'",
        )
        if rig.bench.fake_gpio:
            for pin in ("lid_lock", "warning_light"):
                if not (await rig.gpio("read", name=pin))["value"]:
                    raise AssertionError(f"journal_io fault ({words}): {pin} is off")
        try:
            await rig.dealer.dealer("place_bet", seat=1, amount=1000)
            raise AssertionError(f"journal_io fault ({words}): a bet was accepted")
        except CommandFailed as exc:  # answered, refused
            if "journal" not in exc.reason and "not allowed" not in exc.reason:
                raise AssertionError(f"journal_io fault: refused for another reason: {exc.reason}") from None
    finally:
        if kind == "full":
            await asyncio.to_thread(disk.free)
        else:  # the kernel keeps it read-only while mounted: stop the service, fsck, mount, start
            await asyncio.to_thread(rig.stack.stop_controller)
            await asyncio.to_thread(disk.repair)
    if kind == "read_only":
        await rig.restart_killed_controller()
    if _in_journal_io(d.view):
        await _clear_journal_io(d)
    await d.until(
        lambda v: (
            not _in_journal_io(v) and v.states.get("table", {}).get("state") not in ("journal_io", "resync")
        ),
        "the table back from the journal_io fault",
    )
    await d.barrier()
    return drawn


async def _clear_journal_io(d: Dealer, attempts: int = 100) -> None:
    """A supervisor's clear_journal_io, refused until a commit works again. After the restart that mends a
    read-only disk the view may still show the fault of the service before it (its retained state): a
    service that says it has none has nothing to clear."""
    for i in range(attempts):
        try:
            await d.rig.sv("clear_journal_io")
            return
        except CommandFailed as exc:
            if "no journal_io fault" in exc.reason:
                return
            if i == attempts - 1:
                raise
            await d.barrier()
            await asyncio.sleep(0.05)


async def journal_disk_full(d: Dealer) -> None:
    """The journal's filesystem fills up (another writer) as the next card is drawn; space again, cleared."""
    d.next_draw = partial(_draw_on_failed_disk, kind="full")


async def journal_disk_read_only(d: Dealer) -> None:
    """The journal's disk errors out and the kernel remounts it read-only as the next card is drawn; the
    floor stops the service, repairs and mounts the disk, starts the service, clears the fault if raised."""
    d.next_draw = partial(_draw_on_failed_disk, kind="read_only")


# Faults a soak may inject at a random step of a round (names appear in its report).
MID_ROUND: dict[str, Fault] = {
    "jam": jam,
    "forced_lid": forced_lid,
    "kill_controller": kill_controller,
    "broker_outage": broker_outage,
    "unplug": unplug,
    "lose_acks": lose_acks,
    "unreadable": unreadable,
    "noisy_line": noisy_line,
    "kill_before_commit": kill_before_commit,
    "broker_kill": broker_kill,
    "power_loss": power_loss,
    "sustained_noise": sustained_noise,
    "journal_disk_full": journal_disk_full,
    "journal_disk_read_only": journal_disk_read_only,
}
JOURNAL_DISK = ("journal_disk_full", "journal_disk_read_only")  # need the journal on a disk of its own (root)
NOISY = ("noisy_line", "sustained_noise")  # the line is quieted again after the round
