"""Issue 14 item 3: a journal disk that fills up or goes read-only is a fault at once, on the real stack.

The journal (``<rig>/state``) lives on a filesystem of its own that the test breaks while `tablectl run` runs
against the emulated shoe and a real mosquitto:
- full: a small tmpfs that the test fills (as a runaway log would);
- read-only: a small ext4 image mounted with ``errors=remount-ro``, made to fail through the kernel's
  ``/sys/fs/ext4/<dev>/trigger_fs_error`` so that the kernel remounts it read-only, as it does for an SD card
  or SSD that errors out (a plain ``mount -o remount,ro`` is refused with EBUSY while the service holds the
  database open for writing, so it cannot model a disk going read-only under a running service).
Mounting needs root (CI runs as root); elsewhere the tests are skipped with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.client import CommandFailed
from tablebench.bench.driver import Dealer
from tablebench.bench.rig import Rig
from tests.support.rig import journal_rows, no_invalid_messages, open_alert, until

# These tests break the journal's disk under the service; the free-space watch (issue 27 §6, its own test in
# hil_tests/test_journal_disk_space.py) would refuse rounds on these small filesystems before that.
NO_DISK_LIMITS = {
    "disk_warn_free_mb": 0,
    "disk_refuse_free_mb": 0,
    "disk_warn_free_inodes": 0,
    "disk_refuse_free_inodes": 0,
}

ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounts a tmpfs / an ext4 image for the journal: needs root (CI runs as root)"
)


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@contextlib.contextmanager
def _tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    mountpoint.mkdir(parents=True, exist_ok=True)
    res = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mountpoint))
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        _run("umount", "-l", str(mountpoint))


@contextlib.contextmanager
def _ext4(mountpoint: Path, image: Path) -> Iterator[str]:
    """An ext4 image with errors=remount-ro; yields its loop device's name (e.g. ``loop3``)."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    with image.open("wb") as fh:
        fh.truncate(32 * 1024 * 1024)
    res = _run("mkfs.ext4", "-q", "-F", str(image))
    if res.returncode != 0:
        pytest.skip(f"mkfs.ext4 failed: {res.stderr.strip()}")
    res = _run("mount", "-o", "loop,errors=remount-ro", str(image), str(mountpoint))
    if res.returncode != 0:
        pytest.skip(f"cannot mount an ext4 image on a loop device: {res.stderr.strip()}")
    source = _run("findmnt", "-n", "-o", "SOURCE", str(mountpoint)).stdout.strip()
    try:
        yield Path(source).name
    finally:
        _run("umount", "-l", str(mountpoint))


def _released(image: Path, timeout: float = 20.0) -> None:
    """Wait until no loop device holds ``image`` any more (an unmounted loop device is let go asynchronously)."""
    deadline = time.monotonic() + timeout
    while _run("losetup", "-j", str(image)).stdout.strip() and time.monotonic() < deadline:
        time.sleep(0.1)


def _repair_and_mount(image: Path, mountpoint: Path) -> None:
    """e2fsck the image and mount it again, until it mounts read-write (on a loaded machine the loop device the
    failed filesystem was on may still be let go while fsck runs: the technician checks and repeats too)."""
    said = ""
    for _ in range(3):
        _released(image)
        fsck = _run("e2fsck", "-fy", str(image))  # 0 clean, 1 errors corrected; anything else: try again
        said = f"e2fsck {fsck.returncode}: {fsck.stdout[-300:]}{fsck.stderr[-300:]}"
        if fsck.returncode in (0, 1):
            assert _run("mount", "-o", "loop,errors=remount-ro", str(image), str(mountpoint)).returncode == 0
            if "rw" in _run("findmnt", "-n", "-o", "OPTIONS", str(mountpoint)).stdout.split(","):
                return
            _run("umount", str(mountpoint))
    raise AssertionError(f"{image} does not mount read-write after three repairs ({said})")


def _fill(directory: Path) -> Path:
    """Fill the filesystem to the last byte (ENOSPC), as another writer would."""
    filler = directory / "filler"
    chunk = b"\0" * 65536
    with contextlib.suppress(OSError), filler.open("wb") as fh:
        while True:
            fh.write(chunk)
            fh.flush()
    return filler


class Notifications:
    """systemd's notify socket, as the service sees it (NOTIFY_SOCKET)."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.setblocking(False)
        self.received: list[str] = []

    def _drain(self) -> None:
        while True:
            try:
                self.received.extend(self.sock.recv(4096).decode().splitlines())
            except BlockingIOError:
                return

    async def wait(self, text: str, timeout: float = 30.0) -> str:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while loop.time() < end:
            self._drain()
            found = [m for m in self.received if text in m]
            if found:
                return found[-1]
            await asyncio.sleep(0.05)
        raise AssertionError(f"no notification with {text!r}; last: {self.received[-5:]}")


def _log_size(rig: Rig) -> int:
    return rig.stack.log_path.stat().st_size


async def _wait_log_line(rig: Rig, text: str | tuple[str, ...], after: int, timeout: float = 30.0) -> str:
    """The first line with (one of) ``text`` the controller wrote after byte ``after`` of its log."""
    texts = (text,) if isinstance(text, str) else text
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    exited = False
    while loop.time() < end:
        log = rig.stack.log_path.read_bytes()[after:].decode(errors="replace")
        found = [line for line in log.splitlines() if any(t in line for t in texts)]
        if found:
            return found[0]
        if exited:
            break
        proc = rig.stack.controller_proc
        exited = proc is not None and proc.poll() is not None  # one more look: its last words are written
        await asyncio.sleep(0.1)
    raise AssertionError(f"{texts!r} not in the log:\n{rig.stack.controller_log(30)}")


@ROOT_ONLY
async def test_full_journal_disk_is_a_fault_at_once_and_the_service_answers_stops_and_recovers(
    bench, tmp_path, monkeypatch
) -> None:
    """Before: the table stayed "betting" with the light off and no alert, the dealer's command got no
    answer, SIGTERM crashed in stop() and the restart printed "cannot rollback - no transaction is active"."""
    notify = Notifications(tmp_path / "notify.sock")
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify.sock"))
    workdir = tmp_path / "rig"
    with _tmpfs(workdir / "state", "24m") as state:
        rig = Rig(bench, workdir)
        rig.stack.opts.config_overrides["journal"] = dict(NO_DISK_LIMITS)  # the disk fails, not the watch
        await rig.start()
        try:
            dealer = Dealer(rig)
            await dealer.open_session()
            await rig.sv("unlock_lid")  # the lid free to open: the fault must lock it on the shoe too
            ctl = rig.ctl()
            await until(rig, lambda v: not (v.states.get("lid") or {}).get("locked", True), "lid unlocked")
            assert (await ctl.state())["locked"] is False

            filler = _fill(state)
            refusal = None
            for _ in range(50):  # the first commit that needs a new page of the journal fails
                try:
                    await rig.dealer.dealer("place_bet", seat=1, amount=1000)
                    await rig.dealer.dealer("clear_bet", seat=1)
                except CommandFailed as exc:
                    refusal = exc.reason
                    break
            # The dealer's write is refused naming the disk, or (when another write of the service met the full
            # disk first, e.g. the status file or a shoe event) refused because the fault is already up.
            assert refusal is not None, "the dealer's command was never refused"
            assert "journal disk full" in refusal or "dealing blocked: journal_io" in refusal, refusal

            # The fault at once: state, fault event, critical alert (published without the journal), outputs.
            await until(rig, lambda v: (v.states.get("table") or {}).get("state") == "journal_io", "fault")
            assert "journal_io" in rig.monitor.view.states["table"]["faults"]
            await until(rig, lambda v: open_alert(v, "journal_io") is not None, "journal_io alert")
            alert = open_alert(rig.monitor.view, "journal_io")
            assert alert["severity"] == "critical" and "journal disk full" in alert["reason"]
            assert (await rig.gpio("read", name="lid_lock"))["value"] is True
            assert (await rig.gpio("read", name="warning_light"))["value"] is True
            for _ in range(100):
                if (await ctl.state())["locked"]:
                    break
                await asyncio.sleep(0.05)
            assert (await ctl.state())["locked"] is True  # LockLid went to the shoe
            status = await notify.wait("FAULT journal_io")
            assert "journal disk full" in status

            # Dealing refused with the reason; a card from the shoe is not committed and the pump lives on.
            with pytest.raises(CommandFailed, match="dealing blocked: journal_io"):
                await rig.dealer.dealer("place_bet", seat=2, amount=1000)
            await ctl.draw(1)
            with pytest.raises(CommandFailed, match="journal"):
                await rig.sv("clear_journal_io")  # signed: answered, refused (nothing can be recorded)
            with pytest.raises(CommandFailed, match="dealing blocked: journal_io"):
                await rig.dealer.dealer("no_more_bets")  # still answering after the shoe event
            log = rig.stack.controller_log(400)
            assert "Traceback" not in log, log

            # SIGTERM: a clean stop with the safe outputs.
            assert rig.stack.stop_controller() == 0, rig.stack.controller_log(30)
            assert "Traceback" not in rig.stack.controller_log(400)
            assert (await ctl.state())["locked"] is True
            # The card drawn during the fault was not committed: none of its effects happened (no alert).
            assert open_alert(rig.monitor.view, "dealer_error") is None

            # A restart on the full disk: one line naming the cause, up in the fault, answering.
            mark = _log_size(rig)
            rig.stack.start_controller()
            line = await _wait_log_line(rig, "started in the journal_io fault", mark)
            assert "journal disk full" in line and "cannot rollback" not in rig.stack.controller_log(400)
            assert rig.stack.controller_proc.poll() is None
            await until(rig, lambda v: v.status == "online", "online again")
            with pytest.raises(CommandFailed, match="journal_io"):
                await rig.dealer.dealer("place_bet", seat=2, amount=1000)

            # Space again: the fault and its alert are journaled (with ids); a supervisor clears the fault.
            filler.unlink()
            await until(
                rig,
                lambda v: any(a.get("kind") == "journal_io" for a in v.alerts_open),
                "journal_io alert",
            )
            for _ in range(100):
                try:
                    await rig.sv("clear_journal_io")
                    break
                except CommandFailed as exc:
                    assert "journal" in exc.reason, exc.reason
                    await asyncio.sleep(0.2)
            await until(
                rig,
                lambda v: "journal_io" not in (v.states.get("table") or {}).get("faults", ["journal_io"]),
                "fault cleared",
            )
            await dealer.wait_state("betting")
            await rig.dealer.dealer("place_bet", seat=1, amount=1000)  # dealing again
            from controller.journal import Journal

            journal = Journal(state / "journal.db")
            try:
                kinds = [r.kind for r in journal.records(kinds=("input", "journal_io_cleared", "alert"))]
                inputs = [r.data["input"]["type"] for r in journal.records(kinds=("input",))]
                assert "journal_fault" in inputs and "journal_io_cleared" in kinds
                alerts = [r.data["alert"]["kind"] for r in journal.records(kinds=("alert",))]
                assert "journal_io" in alerts  # raised without the journal, journaled once it wrote again
                assert journal.verify().ok
            finally:
                journal.close()
            no_invalid_messages(rig)
        finally:
            await rig.stop()


@ROOT_ONLY
async def test_read_only_journal_disk_is_a_fault_at_once_and_a_restart_says_read_only(
    bench, tmp_path
) -> None:
    """Before: a shoe event after the disk went read-only killed the shoe-event task silently; the table
    stayed closed-and-fine with no alert and open_table got no answer; the restart crashed."""
    workdir = tmp_path / "rig"
    with _ext4(workdir / "state", tmp_path / "journal.img") as device:
        rig = Rig(bench, workdir)
        rig.stack.opts.config_overrides["journal"] = dict(NO_DISK_LIMITS)  # the disk fails, not the watch
        await rig.start()
        try:
            ctl = rig.ctl()
            Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("test: the disk fails\n")
            await ctl.jam()  # the shoe reports a jam while closed: records that cannot be written
            await until(
                rig, lambda v: "journal_io" in (v.states.get("table") or {}).get("faults", []), "fault"
            )
            await until(rig, lambda v: open_alert(v, "journal_io") is not None, "journal_io alert")
            assert "journal disk read-only" in open_alert(rig.monitor.view, "journal_io")["reason"]
            assert (await rig.gpio("read", name="warning_light"))["value"] is True
            with pytest.raises(CommandFailed, match="journal"):
                await rig.sv("open_table", profile="pt-2001")
            await ctl.force_lid()  # another shoe event during the fault: the pump lives on
            with pytest.raises(CommandFailed, match="not allowed in state closed"):
                await rig.dealer.dealer("place_bet", seat=1, amount=1000)  # still answering
            assert rig.stack.stop_controller() == 0, rig.stack.controller_log(30)
            assert "Traceback" not in rig.stack.controller_log(400)

            mark = _log_size(rig)
            rig.stack.start_controller()
            # Either up in the fault (the journal opens for reading) or, if it cannot even be opened, one
            # line and exit status 3 (docs/deploy.md); both name the cause.
            line = await _wait_log_line(
                rig, ("started in the journal_io fault", "tablectl run: journal"), mark
            )
            assert "journal disk read-only" in line, line
            assert "cannot rollback" not in rig.stack.controller_log(400)
            proc = rig.stack.controller_proc
            if proc.poll() is not None:
                assert proc.returncode == 3 and line.startswith("tablectl run: journal disk read-only")
            else:
                await until(
                    rig, lambda v: "journal_io" in (v.states.get("table") or {}).get("faults", []), "up"
                )
            no_invalid_messages(rig)
        finally:
            await rig.stop()


@ROOT_ONLY
def test_a_journal_that_cannot_even_be_opened_is_one_line_and_exit_status_3(tmp_path) -> None:
    """A new state directory on a read-only filesystem: no journal to come up with. `tablectl run` says why in
    one line and exits 3 (systemd's Restart= and ExecStopPost= take over; docs/deploy.md)."""
    from tablebench.stack import ROOT, TABLECTL, Stack, StackOptions

    ro = tmp_path / "ro"
    ro.mkdir()
    res = _run("mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(ro))
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.strip()}")
    stack = Stack(
        tmp_path / "stack",
        StackOptions(jackpot=False, config_overrides={"table": {"state_dir": str(ro / "state")}}),
    )
    try:
        stack.start_broker()
        stack.start_parts()
        run = subprocess.run(
            [*TABLECTL, "run", "--config", str(stack.config_path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert run.returncode == 3, run.stdout + run.stderr
        # one line on stderr (docs/cli.md), beside the service's log lines; nothing on stdout
        lines = [line for line in run.stderr.splitlines() if line.startswith("tablectl run:")]
        assert run.stdout == "" and len(lines) == 1, run.stderr
        assert lines[0].startswith("tablectl run: journal disk read-only"), run.stderr
        assert "Traceback" not in run.stdout + run.stderr
    finally:
        stack.stop()
        _run("umount", "-l", str(ro))


@ROOT_ONLY
async def test_an_alert_published_without_the_journal_is_journaled_at_the_next_start_and_no_stale_alarm_stays(
    bench, tmp_path
) -> None:
    """Issue 27 §5: during a journal disk fault the ``journal_io`` alert goes out without the journal (retained
    ``alerts/open`` marked ``journaled: false``). Before: after the repair and a restart nothing replaced it and
    the broker kept saying "journal disk read-only, dealing refused" while the table worked, and the journal
    never got the alert. Now the service reads the retained copy back at start, journals the alert it holds
    (acknowledged by ``tablectl``: its fault is not live any more) and publishes the journal's open list."""
    workdir = tmp_path / "rig"
    image = tmp_path / "journal.img"
    state = workdir / "state"
    with _ext4(state, image) as device:
        rig = Rig(bench, workdir)
        rig.stack.opts.config_overrides["journal"] = dict(NO_DISK_LIMITS)  # the disk fails, not the watch
        await rig.start()
        try:
            Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("test: the disk fails\n")
            with pytest.raises(CommandFailed, match="journal"):
                await rig.sv("open_table", profile="pt-2001")  # its nonce cannot be recorded: the fault
            await until(rig, lambda v: open_alert(v, "journal_io") is not None, "journal_io alert")
            assert rig.stack.stop_controller() == 0, rig.stack.controller_log(30)
            # the repair: unmount, fsck, mount (docs/deploy.md)
            assert _run("umount", str(state)).returncode == 0
            _repair_and_mount(image, state)

            rig.stack.start_controller()
            await until(rig, lambda v: v.status == "online", "online again")
            await until(
                rig, lambda v: open_alert(v, "journal_io") is None, "the stale journal_io alarm replaced"
            )
            records = journal_rows(rig.journal_path, "alert")
            raised = [r for r in records if r["action"] == "raised" and r["alert"]["kind"] == "journal_io"]
            assert raised and raised[0]["alert"]["details"]["recovered_from"] == "broker", records
            assert "journal disk read-only" in raised[0]["alert"]["reason"]
            acked = [r for r in records if r["action"] == "acknowledged"]
            assert acked and acked[0]["alert"]["acked_by"] == "tablectl", records
            no_invalid_messages(rig)
        finally:
            await rig.stop()
