"""The README's first command on a fresh Debian (issue 42): a Debian bookworm root filesystem with nothing but
minbase, python3 and git (debootstrap, cached in /var/cache/tablectl-test: tests/support/debian_root.py), a copy
of this checkout as `git clone` leaves it, and `./scripts/demo --auto 3` run in it as root under
``systemd-nspawn``. What it checks:

1. the half-made ``.venv`` the issue found: ``python3 -m venv .venv`` before the venv module is installed stops
   at "ensurepip is not available" and leaves a ``.venv`` with a python and no pip;
2. ``./scripts/demo --auto 3`` then installs what the machine lacks (python3.11-venv, the CA certificates,
   mosquitto, PostgreSQL's server) with apt as root without sudo, makes the ``.venv`` again, installs the
   hash-locked packages from PyPI, and deals and settles three rounds, with a ``setup:`` line per step;
3. the set-up run again has nothing left to do (no apt, no pip);
4. as a technician's account, with a package missing again: without sudo the set-up names what it needs and
   how (one line, exit non-zero); with sudo (allowed for that account) it installs it through sudo.

What differs from a technician's machine, and why: the container shares this host's network (apt and PyPI need
it; its servers bind free ports on 127.0.0.1); a ``policy-rc.d`` that refuses to start services during apt's
installs, as Debian's container images have, so that the packages' own mosquitto and PostgreSQL never start in
this host's network (the demo starts its own); when this host's pip trusts a CA of its own (``PIP_CERT``, a
proxy's), pip in the machine is given the same file. Downloads are kept between runs (apt's .deb files and pip's
cache, in /var/cache/tablectl-test/setup-*): each run still installs every package.

The machine runs in memory (a tmpfs, about a gigabyte once installed). Warm, about 75 s on a shared 2-core
machine, most of it pip downloading and installing requirements/dev.txt; cold, debootstrap adds about three
minutes and apt's downloads about one. Skips, with the reason printed, only when not root, without
debootstrap/systemd-nspawn, or with Debian's mirror unreachable.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from support import debian_root

pytestmark = pytest.mark.timeout(1800)

CHECKOUT = "/srv/tablectl"  # a clone any account may read (step 4 runs the set-up as a technician's account)
APT_CACHE = debian_root.CACHE / "setup-apt-archives"
PIP_CACHE = debian_root.CACHE / "setup-pip-cache"
MACHINE_CA = "/etc/host-pip-ca.crt"


def host_pip_ca() -> Path | None:
    """The CA file this host's pip trusts beyond its own bundle (``PIP_CERT`` or pip.conf's ``cert``)."""
    named = os.environ.get("PIP_CERT")
    if not named:
        conf = configparser.ConfigParser()
        conf.read(["/etc/pip.conf", "/etc/xdg/pip/pip.conf", str(Path.home() / ".config/pip/pip.conf")])
        named = conf.get("global", "cert", fallback="")
    return Path(named) if named and Path(named).is_file() else None


class Debian:
    """A copy of the bare root filesystem; each ``run`` is one ``systemd-nspawn`` of it (no boot)."""

    def __init__(self, root: Path, name: str) -> None:
        self.root, self.name = root, name
        self.ca = host_pip_ca()

    def run(self, script: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        """SCRIPT in bash as root in the checkout, with a login's clean environment."""
        env = {"PATH": debian_root.MACHINE_PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb"}
        binds: list[str] = [f"--bind={PIP_CACHE}:/root/.cache/pip"]
        if self.ca is not None:
            binds.append(f"--bind-ro={self.ca}:{MACHINE_CA}")
            env["PIP_CERT"] = MACHINE_CA
        cmd: Sequence[str] = [
            "systemd-nspawn",
            f"--directory={self.root}",
            f"--machine={self.name}",
            "--register=no",  # no systemd-machined here (no systemd as PID 1 in this sandbox)
            "--keep-unit",
            "--quiet",
            "--as-pid2",
            "--console=pipe",  # the command's stdout and stderr as they are (the set-up speaks on stderr)
            "--resolv-conf=copy-host",
            f"--chdir={CHECKOUT}",
            *binds,
            *(f"--setenv={k}={v}" for k, v in env.items()),
            "/bin/bash",
            "-c",
            script,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def debian(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Debian]:
    reason = debian_root.skip_reason()
    if reason:
        print(f"SKIPPED set-up test: {reason}", file=sys.stderr)
        pytest.skip(reason)
    bare = debian_root.bare_rootfs()
    with debian_root.in_memory(tmp_path_factory.mktemp("bare-debian") / "root") as root:
        yield from prepared(bare, root)


def prepared(bare: Path, root: Path) -> Iterator[Debian]:
    debian_root.copy_tree(bare, root)
    # Debian's container images refuse service starts during installs: the packages' own daemons would start
    # in this host's network (its ports 1883 and 5432 may be taken), and nothing here needs them running.
    policy = root / "usr" / "sbin" / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    archives = root / "var" / "cache" / "apt" / "archives"
    APT_CACHE.mkdir(parents=True, exist_ok=True)
    PIP_CACHE.mkdir(parents=True, exist_ok=True)
    for deb in APT_CACHE.glob("*.deb"):
        shutil.copy2(deb, archives / deb.name)
    debian_root.copy_checkout(root / CHECKOUT.lstrip("/"))
    yield Debian(root, f"setup-env-{os.getpid()}")


def keep_downloads(root: Path) -> None:
    """apt's downloaded .deb files, for the next run (each written under a temporary name, then renamed)."""
    for deb in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):
        kept = APT_CACHE / deb.name
        if not kept.exists():
            tmp = APT_CACHE / f".{deb.name}.{os.getpid()}"
            shutil.copy2(deb, tmp)
            tmp.rename(kept)


def test_the_readme_demo_on_a_debian_with_only_python3_and_git(debian: Debian) -> None:
    root = debian.root
    venv = root / CHECKOUT.lstrip("/") / ".venv"
    assert not (root / "usr" / "bin" / "sudo").exists() and not (root / "usr" / "sbin" / "mosquitto").exists()

    # 1. the attempt the issue saw fail: no venv module yet, a .venv with a python and no pip left behind
    half = debian.run("python3 -m venv .venv")
    assert half.returncode != 0 and "ensurepip is not available" in " ".join(half.stdout.split()), half
    assert (venv / "bin" / "python").is_symlink() and not (venv / "bin" / "pip").exists()

    # 2. the README's command, as root (no sudo on this machine)
    demo = debian.run("./scripts/demo --auto 3")
    keep_downloads(root)
    said = [line for line in demo.stderr.splitlines() if line.startswith("setup: ")]
    assert demo.returncode == 0, f"{demo.stdout[-3000:]}\n{demo.stderr[-5000:]}"
    installing = next((line for line in said if line.startswith("setup: installing ") and "apt" in line), "")
    for package in ("python3.11-venv", "ca-certificates", "mosquitto", "mosquitto-clients", "postgresql"):
        assert re.search(rf"\b{re.escape(package)}\b", installing), (package, said)
    assert any("incomplete" in line and "making it again" in line for line in said), said
    assert any(line.startswith("setup: creating .venv") for line in said), said
    assert said[-1] == "setup: done", said
    settled = re.findall(r"^settlement (\S+): dealer .+ \| Seat \d", demo.stdout, re.MULTILINE)
    assert len(set(settled)) == 3, demo.stdout[-3000:]  # three rounds, each dealt to a seat and settled
    assert re.search(r"^card \d+ to Seat \d: ", demo.stdout, re.MULTILINE), demo.stdout[-3000:]

    # 3. again: the set-up finds everything in place and says nothing
    again = debian.run("source scripts/setup-env && command -v tablectl")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"{CHECKOUT}/.venv/bin/tablectl"
    assert not [line for line in again.stderr.splitlines() if line.startswith("setup: ")], again.stderr

    # 4. a technician's account: without sudo, what is missing is named with the way out; with sudo, installed
    as_tech = (
        "runuser -u tech -- env HOME=/tmp bash -c 'source scripts/setup-env && command -v mosquitto_pub'"
    )
    prepared = debian.run("useradd --create-home tech && dpkg --purge mosquitto-clients >/dev/null")
    assert prepared.returncode == 0, prepared.stderr
    refused = debian.run(as_tech)
    assert refused.returncode != 0, refused.stdout
    assert "setup: installing mosquitto-clients from apt needs root, and there is no sudo" in refused.stderr
    sudo = debian.run(
        "apt-get install -y -qq --no-install-recommends sudo >/dev/null && "
        "echo 'tech ALL=(root) NOPASSWD: ALL' >/etc/sudoers.d/tech && chmod 0440 /etc/sudoers.d/tech"
    )
    keep_downloads(root)
    assert sudo.returncode == 0, sudo.stderr
    through_sudo = debian.run(as_tech)
    assert through_sudo.returncode == 0, through_sudo.stderr
    assert "setup: installing mosquitto-clients from apt" in through_sudo.stderr
    assert through_sudo.stdout.strip() == "/usr/bin/mosquitto_pub"
