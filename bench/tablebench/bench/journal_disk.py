"""The journal's own disk on the bench: an ext4 image on a loop device mounted as the rig's state directory, so
a soak can make it full or read-only under the running service (issue 14 item 3) and mend it again.

- full: the free space taken by a filler file (``fallocate``, then writes until ENOSPC), as a runaway log
  would; freed by deleting it. Before filling, the bench checkpoints the journal's WAL to zero bytes
  (``wal_checkpoint(TRUNCATE)``, content unchanged) so that the service's next commit needs new blocks and
  fails, instead of reusing the WAL's old ones.
- read-only: the kernel's own path for a failing SD card or SSD, ``errors=remount-ro`` set off through
  ``/sys/fs/ext4/<dev>/trigger_fs_error`` (``mount -o remount,ro`` is refused with EBUSY while the service holds
  the database open for writing). The kernel does not let it be written again while it stays mounted
  (``emergency_ro``), so the floor's repair is: stop the service, unmount, ``e2fsck``, mount, start.

Mounting needs root (CI runs as root); ``unavailable()`` says why in one line otherwise.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import time
from pathlib import Path

IMAGE_BYTES = 2 * 1024**3  # sparse: the journal of a long soak fits with room to spare
CHUNK = 4096


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def unavailable() -> str:
    """Why this machine cannot give the journal a disk of its own ("" if it can)."""
    if os.geteuid() != 0:
        return "the journal disk faults mount an ext4 image for the journal: needs root (CI runs as root)"
    for tool in ("mkfs.ext4", "e2fsck", "mount", "umount", "findmnt"):
        if _run("sh", "-c", f"command -v {tool}").returncode != 0:
            return f"the journal disk faults need {tool}"
    return ""


REPAIR_ATTEMPTS = (
    3  # unmount, wait for the loop device to go, e2fsck, mount: until the disk mounts read-write
)


class JournalDiskError(RuntimeError):
    pass


class JournalDisk:
    """An ext4 image mounted at ``mountpoint`` (the rig's state directory) with ``errors=remount-ro``."""

    def __init__(self, mountpoint: Path, image: Path) -> None:
        self.mountpoint = mountpoint
        self.image = image
        self.device = ""  # e.g. loop3
        self.filler = mountpoint / "filler"

    def _check(self, res: subprocess.CompletedProcess[str], what: str) -> None:
        if res.returncode != 0:
            raise JournalDiskError(f"{what}: {(res.stderr or res.stdout).strip()}")

    def create(self) -> None:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        with self.image.open("wb") as fh:
            fh.truncate(IMAGE_BYTES)
        self._check(_run("mkfs.ext4", "-q", "-F", "-m", "0", str(self.image)), "mkfs.ext4")
        self.mount()

    def mount(self) -> None:
        res = _run("mount", "-o", "loop,errors=remount-ro", str(self.image), str(self.mountpoint))
        self._check(res, "mount the journal's ext4 image")
        source = _run("findmnt", "-n", "-o", "SOURCE", str(self.mountpoint)).stdout.strip()
        self.device = Path(source).name

    def unmount(self) -> None:
        if self.device:
            self._check(_run("umount", str(self.mountpoint)), "umount the journal's disk")
            self.device = ""

    def close(self) -> None:
        """At the end of a run: unmount (lazily, whatever still holds it) and forget the image."""
        if self.device:
            _run("umount", "-l", str(self.mountpoint))
            self.device = ""
        with contextlib.suppress(OSError):
            self.image.unlink()

    # ---- full ----
    def fill(self, journal: Path) -> None:
        """Take every free block: the service's next commit fails with ENOSPC."""
        conn = sqlite3.connect(str(journal), timeout=30, isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            st = os.statvfs(self.mountpoint)
            big = max(0, st.f_bavail * st.f_frsize - 4 * 1024 * 1024)
            with contextlib.suppress(OSError):
                os.posix_fallocate(fd, 0, big)
            chunk = b"\0" * CHUNK
            with contextlib.suppress(OSError):
                os.lseek(fd, 0, os.SEEK_END)
                while True:
                    os.write(fd, chunk)
            with contextlib.suppress(OSError):
                os.fsync(fd)  # delayed allocation: the blocks are taken now, not at write-back
        finally:
            os.close(fd)

    def free(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()

    # ---- read-only ----
    def fail(self) -> None:
        """The kernel's errors=remount-ro path, as for a disk that errors out."""
        Path(f"/sys/fs/ext4/{self.device}/trigger_fs_error").write_text("bench: the journal disk fails\n")

    def is_read_only(self) -> bool:
        opts = _run("findmnt", "-n", "-o", "OPTIONS", str(self.mountpoint)).stdout
        return "emergency_ro" in opts or opts.startswith("ro")

    def repair(self) -> None:
        """The floor's repair of a disk gone read-only (the service stopped first): unmount, fsck, mount."""
        if not self.device:
            raise JournalDiskError(f"repair: nothing mounted at {self.mountpoint} by this bench")
        opts = ""
        for _attempt in range(REPAIR_ATTEMPTS):
            self.unmount()
            # The old loop device is detached asynchronously; until it is, its buffers (the superblock with the
            # error flag) can still reach the image after e2fsck, and the next mount comes up emergency_ro (seen
            # in soaks: "still read-only after fsck and mount"). Wait for it to go, then check and mount.
            self._wait_detached()
            res = _run("e2fsck", "-f", "-y", str(self.image))
            if res.returncode not in (0, 1):  # 1: errors corrected
                raise JournalDiskError(f"e2fsck exit {res.returncode}: {res.stdout.strip()[-300:]}")
            self.mount()
            if not self.is_read_only():
                return
            opts = _run("findmnt", "-n", "-o", "SOURCE,OPTIONS", str(self.mountpoint)).stdout.strip()
        # never start the service on a disk the repair did not mend, silently
        raise JournalDiskError(
            f"repair: {self.mountpoint} still read-only after {REPAIR_ATTEMPTS} rounds of fsck and mount ({opts})"
        )

    def _wait_detached(self, timeout: float = 10.0) -> None:
        """Until no loop device holds the image any more (``losetup -j``), at most ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while _run("losetup", "-j", str(self.image)).stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        _run("sync")
