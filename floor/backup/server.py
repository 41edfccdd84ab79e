"""PostgreSQL's own programs, as the backup jobs run them: pg_basebackup, tar, pg_archivecleanup and a private
``postgres`` on a restored data directory (``RestoredServer``).

The jobs run as the ``postgres`` account (tablectl-floor-backup*.service, User=postgres). Run by root (the
technician's ``tablectl-floor restore``, the tests), every program here runs as ``postgres`` too (``setpriv``),
so the files it writes belong to the account that owns the server's data, and the server agrees to start."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psycopg

SERVER_USER = "postgres"
_DEBIAN_BIN = Path("/usr/lib/postgresql")


class ToolError(RuntimeError):
    """A PostgreSQL program failed; the message says which and why."""


def bin_dir(program: str = "pg_basebackup") -> Path:
    """Debian's newest server binaries (``/usr/lib/postgresql/<major>/bin``) holding ``program``, else where
    ``program`` is on PATH."""
    found = sorted(
        (int(p.parent.parent.name), p.parent)
        for p in _DEBIAN_BIN.glob(f"*/bin/{program}")
        if p.parent.parent.name.isdigit()
    )
    if found:
        return found[-1][1]
    on_path = shutil.which(program)
    if on_path:
        return Path(on_path).parent
    raise ToolError("no PostgreSQL programs: install Debian's postgresql package")


def as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--reuid", SERVER_USER, "--regid", SERVER_USER, "--clear-groups"]


def own(path: Path) -> None:
    """A folder made by root for the server's account (nothing to do when not root)."""
    if os.geteuid() == 0:
        account = pwd.getpwnam(SERVER_USER)
        os.chown(path, account.pw_uid, account.pw_gid)


def make_private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    own(path)


def run_tool(args: list[str], *, timeout: float, what: str) -> str:
    """Run one program as the server's account; its stdout, or ToolError with the end of its stderr."""
    try:
        done = subprocess.run(
            [*as_server_user(), *args], capture_output=True, text=True, check=False, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise ToolError(f"{what}: no result after {timeout:.0f} s") from None
    except OSError as exc:
        raise ToolError(f"{what}: {exc}") from None
    if done.returncode != 0:
        raise ToolError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return done.stdout


def free_port() -> int:
    """A port number for the private server's socket file (it listens on no network address)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RestoredServer:
    """A private ``postgres`` on a restored data directory: no network address (a unix socket in its own 0700
    folder, the local connections trusted), no WAL archiving of its own. It replays the archive up to the
    recovery target (or the archive's end), then opens; ``wait_open`` waits for that."""

    def __init__(self, data_dir: Path, socket_dir: Path, log_path: Path) -> None:
        self.data_dir, self.socket_dir, self.log_path = data_dir, socket_dir, log_path
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    def dsn(self, dbname: str) -> str:
        return psycopg.conninfo.make_conninfo(
            host=str(self.socket_dir), port=self.port, user=SERVER_USER, dbname=dbname
        )

    def start(self) -> None:
        make_private_dir(self.socket_dir)
        (self.data_dir / "pg_hba.conf").write_text(
            "# the restore check's private server: its own socket folder only\nlocal all all trust\n"
        )
        (self.data_dir / "pg_ident.conf").write_text("")
        conf = self.data_dir / "postgresql.conf"
        if not conf.exists():  # Debian keeps the server's settings outside the data directory
            conf.write_text("# the restore check's private server: its settings are on its command line\n")
        for f in ("pg_hba.conf", "pg_ident.conf", "postgresql.conf"):
            own(self.data_dir / f)
        settings = (
            "listen_addresses=",
            f"port={self.port}",
            f"unix_socket_directories={self.socket_dir}",
            "archive_mode=off",
            "hot_standby=off",  # opens once replayed, not before: what it shows is the restored state
            "shared_buffers=32MB",
            "max_wal_senders=0",
            "wal_level=replica",
            f"hba_file={self.data_dir / 'pg_hba.conf'}",
            f"ident_file={self.data_dir / 'pg_ident.conf'}",
            "log_min_messages=warning",
            "ssl=off",
        )
        cmd = [*as_server_user(), str(bin_dir() / "postgres"), "-D", str(self.data_dir)]
        cmd += [f"-c{s}" for s in settings]
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log
            )

    def wait_open(self, dbname: str, timeout: float) -> None:
        """Until the server accepts connections out of recovery; ToolError when it exits or the time is up."""
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = self._proc.returncode if self._proc else None
                self._proc = None
                raise ToolError(f"the restored server stopped ({code}): {self.log_tail()}")
            try:
                with psycopg.connect(self.dsn(dbname), connect_timeout=2) as conn:
                    row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                    if row and not row[0]:
                        return
            except psycopg.OperationalError:
                pass
            if time.monotonic() > deadline:
                raise ToolError(f"the restored server did not open within {timeout:.0f} s: {self.log_tail()}")
            time.sleep(0.2)  # the poll interval of a condition wait: the server replays, then opens

    def log_tail(self, chars: int = 800) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""

    def stop(self, timeout: float = 60.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)  # fast shutdown
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
