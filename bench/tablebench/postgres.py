"""A private PostgreSQL server for the tests, the benchmarks and the floor demo: development tooling, like
``tablebench/broker.py``; a production floor names its own server (``FLOOR_DSN``, docs/floor.md).

``Postgres.start()`` runs Debian's server binaries (package ``postgresql``, which ``scripts/setup-env`` installs):
``initdb`` into a new private directory, then ``postgres`` listening on a free port on 127.0.0.1 and on a unix
socket in that directory, trust authentication for the superuser ``postgres`` (reachable only from this machine).
``stop()`` shuts it down (fast shutdown, then SIGKILL) and removes the directory. The server is started with a
parent-death signal, so it also goes when the process that started it dies without stopping it (when started
from the main thread: see ``_as_server_user``).

``initdb`` and ``postgres`` refuse to run as root: run as root, both run as the ``postgres`` system user (the
package creates it) and the directory is owned by it.

``admin_dsn()`` is the server the tests create their databases in: ``$FLOOR_TEST_DSN`` when set (an account that
may CREATE DATABASE), otherwise one private server per process, started on first use and stopped at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from floor.backup.server import ToolError
from floor.backup.server import bin_dir as floor_bin_dir
from tablebench.broker import free_port
from tablebench.procs import stop_process

TEST_DSN_ENV = "FLOOR_TEST_DSN"
SUPERUSER = "postgres"
SERVICE_USER = "postgres"  # the system account the server runs as when started by root
_SETTINGS = (
    "shared_buffers=32MB",
    "max_connections=200",
    "log_min_messages=warning",
)


class PostgresError(RuntimeError):
    pass


def bin_dir() -> Path:
    """The newest Debian server binaries (``/usr/lib/postgresql/<major>/bin``), else ``postgres`` on PATH (the
    floor's own lookup, floor/backup/server.py)."""
    try:
        return floor_bin_dir("postgres")
    except ToolError:
        raise PostgresError(
            "no PostgreSQL server binaries: install Debian's `postgresql` (scripts/setup-env does)"
        ) from None


def _as_server_user(netns: str = "") -> list[str]:
    """setpriv's options: the parent-death signal, and, when root, the ``postgres`` account; run in the network
    namespace ``netns`` when given (``ip netns exec`` execs setpriv: the same process).

    Linux sends the parent-death signal when the THREAD that started the child ends: only a server started
    from the main thread gets it (one started from another thread lives until ``stop()`` or exit)."""
    opts = ["ip", "netns", "exec", netns, "setpriv"] if netns else ["setpriv"]
    if threading.current_thread() is threading.main_thread():
        opts += ["--pdeathsig", "INT"]  # SIGINT: the server's fast shutdown
    if os.geteuid() == 0:
        opts += ["--reuid", SERVICE_USER, "--regid", SERVICE_USER, "--clear-groups"]
    return opts


@dataclass
class Postgres:
    """One private server (see the module docstring)."""

    workdir: Path
    port: int
    host: str = "127.0.0.1"
    settings: tuple[str, ...] = ()  # more ``name=value`` for the server's command line (WAL archiving, ...)
    netns: str = ""  # run in this network namespace, listening on ``host`` there (port 5432: its own stack)
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        return self.workdir / "postgres.log"

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{dbname}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @classmethod
    def start(
        cls, parent: str | Path | None = None, *, timeout: float = 90.0, settings: tuple[str, ...] = (),
        host: str = "127.0.0.1", netns: str = "",
    ) -> Postgres:  # fmt: skip
        """initdb into a new directory under ``parent`` (default: the system's temp directory), start, wait."""
        workdir = Path(tempfile.mkdtemp(prefix="tablebench-pg-", dir=parent))
        server = cls(workdir, 0, host, settings, netns)
        try:
            server._initdb()
            server._launch_on_a_free_port(timeout)
            return server
        except BaseException:
            server.stop()
            raise

    @classmethod
    def standby_of(
        cls, primary: Postgres, slot: str, name: str, *, timeout: float = 90.0, settings: tuple[str, ...] = (),
        host: str = "127.0.0.1", netns: str = "",
    ) -> Postgres:  # fmt: skip
        """A hot standby of ``primary``, as the floor installer makes one (docs/floor.md "The standby floor
        server"): ``pg_basebackup -R`` over the replication protocol into a new directory, streaming through the
        physical slot ``slot`` (which must exist), ``cluster_name`` = ``name`` (what the primary's
        ``pg_stat_replication`` and ``synchronous_standby_names`` call it)."""
        workdir = Path(tempfile.mkdtemp(prefix="tablebench-pg-standby-"))
        server = cls(workdir, 0, host, (f"cluster_name={name}", "hot_standby=on", *settings), netns)
        try:
            if os.geteuid() == 0:
                account = pwd.getpwnam(SERVICE_USER)
                os.chown(workdir, account.pw_uid, account.pw_gid)
            cmd = [*_as_server_user(netns), str(bin_dir() / "pg_basebackup"), "-h", primary.host, "-p",
                   str(primary.port), "-U", SUPERUSER, "-D", str(server.data_dir), "-R", "-S", slot,
                   "-X", "stream", "--checkpoint=fast", "--no-sync"]  # fmt: skip
            done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, check=False, timeout=120)
            if done.returncode != 0:
                raise PostgresError(
                    f"pg_basebackup failed ({done.returncode}): {done.stderr.strip()[-2000:]}"
                )
            server._launch_on_a_free_port(timeout)
            return server
        except BaseException:
            server.stop()
            raise

    def _launch_on_a_free_port(self, timeout: float) -> None:
        """Start on a free port; another process may take the port between the choice and the bind: try again."""
        for attempt in range(5):
            self.port = 5432 if self.netns else free_port(self.host)
            try:
                self._launch(timeout)
                return
            except PostgresError:
                if attempt == 4 or "could not bind" not in self.log_tail():
                    raise

    def kill(self) -> None:
        """SIGKILL the server and every process of it, as when its host dies (the directory stays until
        ``stop()``)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        children = [
            int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == proc.pid
        ]
        proc.kill()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()

    def _initdb(self) -> None:
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam(SERVICE_USER)
            except KeyError:
                raise PostgresError(
                    f"no `{SERVICE_USER}` system user to run the server as (root may not)"
                ) from None
            os.chown(self.workdir, account.pw_uid, account.pw_gid)
        cmd = [*_as_server_user(), str(bin_dir() / "initdb"), "-D", str(self.data_dir), "-U", SUPERUSER,
               "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"]  # fmt: skip
        done = subprocess.run(cmd, cwd=self.workdir, capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            raise PostgresError(f"initdb failed ({done.returncode}): {done.stderr.strip()[-2000:]}")

    def _launch(self, timeout: float) -> None:
        opts = [
            f"-c{s}"
            for s in (
                *_SETTINGS,
                f"listen_addresses={self.host}",
                f"port={self.port}",
                f"unix_socket_directories={self.workdir}",
                *self.settings,
            )
        ]
        cmd = [*_as_server_user(self.netns), str(bin_dir() / "postgres"), "-D", str(self.data_dir), *opts]
        # the server's stderr is its log; opened by us, so the log file needs no rights of the server's account
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(cmd, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                code, self._proc = self._proc.returncode, None
                raise PostgresError(f"postgres exited with {code}: {self.log_tail()}")
            try:
                with psycopg.connect(self.dsn(), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise PostgresError(f"postgres did not accept connections: {self.log_tail()}") from None
                time.sleep(0.1)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def restart(self, timeout: float = 60.0) -> None:
        """Start again on the same port and data directory (crash recovery replays the WAL); retried while the
        killed server's last backends still hold its shared memory."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._launch(max(5.0, deadline - time.monotonic()))
                return
            except PostgresError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT), SIGKILL if it hangs; then the directory is removed."""
        proc, self._proc = self._proc, None
        stop_process(proc, signal.SIGINT, timeout)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Postgres:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _parent(proc_dir: Path) -> int | None:
    try:
        stat = (proc_dir / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


_shared: Postgres | None = None
_shared_lock = threading.Lock()


def shared_server() -> Postgres:
    """This process's private server, started on first use and stopped when the process exits."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Postgres.start()
            atexit.register(stop_shared_server)
        return _shared


def stop_shared_server() -> None:
    global _shared
    with _shared_lock:
        server, _shared = _shared, None
    if server is not None:
        server.stop()


def admin_dsn() -> str:
    """Where test databases are created: ``$FLOOR_TEST_DSN`` if given, else this process's private server."""
    return os.environ.get(TEST_DSN_ENV) or shared_server().dsn()


_DB_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@contextmanager
def temp_database(prefix: str = "floor_test", admin: str | None = None) -> Iterator[str]:
    """A new, empty database on ``admin`` (default: ``admin_dsn()``); dropped, connections and all, afterwards.
    Yields its DSN."""
    admin = admin or admin_dsn()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    if not _DB_NAME.fullmatch(name):
        raise ValueError(f"not a database name: {name!r}")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(admin, dbname=name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def wal_archived(dsn: str, timeout: float = 60.0) -> str:
    """Close the server's current WAL segment and wait until its ``archive_command`` took it (the WAL archive
    then holds everything committed so far); the segment's name."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()
        assert row is not None
        wanted = str(row[0])
        deadline = time.monotonic() + timeout
        while True:
            got = conn.execute("SELECT last_archived_wal FROM pg_stat_archiver").fetchone()
            if got is not None and got[0] is not None and got[0] >= wanted:
                return wanted
            if time.monotonic() > deadline:
                raise PostgresError(f"timed out waiting for WAL segment {wanted} to be archived")
            time.sleep(0.05)
