"""A Debian bookworm root filesystem booted under systemd, for the installer test (tests/test_installer_debian.py).

- ``rootfs()``: debootstrap (``--variant=minbase``: no udev, no sudo, like a minimal Debian) with the packages a
  Raspberry Pi OS Lite image has or the installer's step 1 would install, cached in
  ``/var/cache/tablectl-test/rootfs-<hash of the package list>`` (outside any clone, so a fresh CI clone reuses
  it; ``TABLECTL_TEST_CACHE`` names another folder). Each test works on its own copy.
- ``wheelhouse()``: the hash-locked ``requirements/pi.txt`` files (and the wheel build's setuptools), downloaded
  once with pip and cached beside it: the booted machine has no network (``--private-network``), so pip there
  installs from this folder (``PIP_NO_INDEX``/``PIP_FIND_LINKS``), the files still checked against their hashes.
- ``Machine``: ``systemd-nspawn --boot`` of a copy. This sandbox has no systemd as PID 1 (so no
  systemd-machined and no system bus): ``--register=no --keep-unit``, and commands run in the machine with
  ``nsenter`` into its PID 1's namespaces, which is what ``machinectl shell`` / ``systemctl -M`` do through
  machined. Everything waits for conditions (``systemctl is-system-running --wait``, unit states), never sleeps.

``skip_reason()`` is the only reason the test may skip: not root, no debootstrap/systemd-nspawn, or Debian's
mirror not reachable.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITE = "bookworm"
MIRROR = os.environ.get("TABLECTL_TEST_MIRROR", "http://deb.debian.org/debian")
CACHE = Path(os.environ.get("TABLECTL_TEST_CACHE", "/var/cache/tablectl-test"))
# What a Raspberry Pi OS Lite image has, plus what install.sh's step 1 installs (the machine has no network
# when it runs: step 1 then finds them all installed and needs no apt), plus systemd to boot. No udev: a
# minimal Debian, whose missing /etc/udev/rules.d the installer must create.
PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "python3",
    "python3-venv",
    "python3-dev",
    "python3-pip",
    "mosquitto",
    "mosquitto-clients",
    "openssl",
    "ca-certificates",
    "swig",
)
# The set-up's test (tests/test_setup_env_debian.py): what the README assumes of a fresh machine, no more.
BARE_PACKAGES = ("python3", "git")
MACHINE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def skip_reason(extra: Sequence[str] = ()) -> str | None:
    if os.geteuid() != 0:
        return "the installer test needs root (debootstrap, systemd-nspawn)"
    for tool, package in (("debootstrap", "debootstrap"), ("systemd-nspawn", "systemd-container")):
        if shutil.which(tool) is None:
            return f"{tool} not installed (apt-get install {package}; scripts/test installs it)"
    if not _rootfs_dir(extra).joinpath(".complete").exists():
        try:
            with urllib.request.urlopen(f"{MIRROR}/dists/{SUITE}/Release", timeout=15) as answer:
                answer.read(64)
        except OSError as exc:
            return f"debootstrap cannot reach Debian's mirror {MIRROR}: {exc}"
    return None


def _packages(extra: Sequence[str]) -> tuple[str, ...]:
    return (*PACKAGES, *extra)


def _rootfs_dir(extra: Sequence[str] = ()) -> Path:
    key = hashlib.sha256(" ".join((SUITE, MIRROR, *_packages(extra))).encode()).hexdigest()[:16]
    return CACHE / f"rootfs-{key}"


@contextlib.contextmanager
def _cache_lock() -> Iterator[None]:
    """One builder of the cache at a time (two test runs on one machine share it)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def rootfs(extra: Sequence[str] = ()) -> Path:
    """The cached debootstrap tree (built on first use, a few minutes; read-only by convention). EXTRA: packages
    beyond PACKAGES (the floor's server adds PostgreSQL), cached in a tree of their own."""
    done = _rootfs_dir(extra)
    if (done / ".complete").exists():
        return done
    with _cache_lock():
        if not (done / ".complete").exists():
            _debootstrap(done, _packages(extra))
    return done


def bare_rootfs(packages: Sequence[str] = BARE_PACKAGES) -> Path:
    """A Debian with only minbase and PACKAGES (the set-up's test: nothing but python3 and git, as the README
    assumes), cached beside the installer's tree in a folder of its own; read-only by convention."""
    key = hashlib.sha256(" ".join((SUITE, MIRROR, "minbase", *packages)).encode()).hexdigest()[:16]
    done = CACHE / f"bare-{key}"
    if (done / ".complete").exists():
        return done
    with _cache_lock():
        if not (done / ".complete").exists():
            _debootstrap(done, packages)
    return done


def _debootstrap(done: Path, packages: Sequence[str]) -> None:
    work = done.with_name(done.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(done, ignore_errors=True)
    cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", SUITE, str(work), MIRROR]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"debootstrap failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    (work / ".complete").write_text(" ".join(packages) + "\n")
    work.rename(done)


def wheelhouse(lock_name: str = "pi.txt") -> Path:
    """pip's files for requirements/<lock_name> (hash-checked; the floor's server: floor.txt) and the wheel
    build, cached by the lock's digest."""
    lock = ROOT / "requirements" / lock_name
    pyproject = ROOT / "pyproject.toml"
    key = hashlib.sha256(lock.read_bytes() + pyproject.read_bytes()).hexdigest()[:16]
    done = CACHE / f"wheelhouse-{key}"
    if (done / ".complete").exists():
        return done
    with _cache_lock():
        if not (done / ".complete").exists():
            _download(lock, done)
    return done


def _download(lock: Path, done: Path) -> None:
    work = done.with_name(done.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pip = [sys.executable, "-m", "pip", "download", "-q", "-d", str(work)]
    for args in (["--require-hashes", "-r", str(lock)], ["setuptools>=77", "wheel"]):
        result = subprocess.run([*pip, *args], capture_output=True, text=True, timeout=600, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"pip download {args} failed:\n{result.stderr[-3000:]}")
    (work / ".complete").write_text("")
    shutil.rmtree(done, ignore_errors=True)
    work.rename(done)


@contextlib.contextmanager
def in_memory(root: Path, size: str = "6g") -> Iterator[Path]:
    """ROOT (made here) as a tmpfs of its own, for a machine's copy: dpkg's, pip's and the removal's many small
    writes cost minutes on a shared disk and next to nothing there (a machine is about a gigabyte once
    installed). Unmounted, its memory freed, on the way out; where mounting is not allowed, a plain folder,
    removed."""
    root.mkdir(mode=0o755)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tablectl-test", str(root)]
    mounted = subprocess.run(mount, capture_output=True, check=False).returncode == 0
    try:
        yield root
    finally:
        if mounted:
            subprocess.run(["umount", "--lazy", str(root)], capture_output=True, check=False)
        else:
            shutil.rmtree(root, ignore_errors=True)


def copy_tree(src: Path, dest: Path) -> None:
    """A copy keeping owners, modes, links and device files (cp -a; a reflink where the file system can)."""
    subprocess.run(["cp", "-a", "--reflink=auto", f"{src}/.", str(dest)], check=True, timeout=600)


def copy_checkout(dest: Path) -> None:
    """The source tree as a technician's `git clone` has it: the files git tracks (as they are in this work
    tree, with untracked new files not ignored by .gitignore), nothing else (no .venv, no caches)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    dest.mkdir(parents=True, exist_ok=True)
    names = [n for n in listed.split(b"\0") if n and os.path.lexists(ROOT / os.fsdecode(n))]
    tar = subprocess.Popen(
        ["tar", "-C", str(ROOT), "--null", "-T", "-", "-cf", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    unpack = subprocess.Popen(["tar", "-C", str(dest), "-xf", "-"], stdin=tar.stdout)
    assert tar.stdin is not None and tar.stdout is not None
    tar.stdout.close()
    tar.stdin.write(b"\0".join(names) + b"\0")
    tar.stdin.close()
    assert tar.wait(timeout=120) == 0 and unpack.wait(timeout=120) == 0


@dataclass
class Machine:
    """A booted copy of the root filesystem (``systemd-nspawn --boot --private-network``)."""

    root: Path
    name: str
    binds: Sequence[str] = ()  # systemd-nspawn options: --bind=SRC:DEST, --bind-ro=SRC:DEST
    process: subprocess.Popen[bytes] | None = None
    leader: int = 0
    log: Path = field(default_factory=lambda: Path("/dev/null"))

    def boot(self, timeout: float = 120.0) -> None:
        cmd = [
            "systemd-nspawn",
            f"--directory={self.root}",
            f"--machine={self.name}",
            "--register=no",  # no systemd-machined here (no systemd as PID 1 in this sandbox)
            "--keep-unit",
            "--private-network",
            "--boot",
            "--console=passive",
            *self.binds,
        ]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while not self.leader:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"systemd-nspawn exited {self.process.returncode}: {self.log.read_text()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError("the machine's systemd did not start")
            leader = _systemd_child(self.process.pid)
            # systemctl talks to the machine's systemd over its private socket: wait for it to exist
            if leader and Path(f"/proc/{leader}/root/run/systemd/private").exists():
                self.leader = leader
            else:
                time.sleep(0.05)  # the poll interval of a condition wait
        state = self.run(["systemctl", "is-system-running", "--wait"], timeout=timeout)
        if state.stdout.strip() not in ("running", "degraded"):
            raise RuntimeError(f"the machine did not finish booting: {state.stdout} {state.stderr}")

    def run(
        self, cmd: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Run CMD as root in the machine with a clean environment (like a root login shell)."""
        assert self.leader, "not booted"
        base = {"PATH": MACHINE_PATH, "HOME": "/root", "LANG": "C.UTF-8", **(env or {})}
        full = [
            "nsenter",
            f"--target={self.leader}",
            "--all",
            "env",
            "-i",
            *(f"{k}={v}" for k, v in base.items()),
            *cmd,
        ]
        return subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)

    def show(self, unit: str, prop: str) -> str:
        return self.run(["systemctl", "show", "-p", prop, "--value", unit]).stdout.strip()

    def wait_unit(self, unit: str, states: set[str], timeout: float = 120.0) -> str:
        """Wait until UNIT's ActiveState is one of STATES (or "failed"); returns it."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.show(unit, "ActiveState")
            if state in states or state == "failed" or time.monotonic() > deadline:
                return state
            time.sleep(0.2)  # the poll interval of a condition wait

    def poweroff(self, timeout: float = 60.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)  # nspawn asks the machine's systemd to power off
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def _systemd_child(pid: int) -> int:
    """The machine's PID 1 as seen from here: the child of systemd-nspawn that runs systemd."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0
    for child in children:
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "systemd":
                return int(child)
        except OSError:
            continue
    return 0
